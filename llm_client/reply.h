/* reply.h - pulling the one gpu.module out of an LLM's reply.
 *
 * Replies are prose with fenced code blocks (``` or ~~~, any info string
 * such as "mlir"). Exactly one gpu.module op must appear inside the fenced
 * blocks; its whole block is the kernel. A reply with no fences at all is
 * accepted when it is nothing but MLIR holding one gpu.module. Everything
 * else is refused with a message fit to send back to the model.
 */
#ifndef LF_LLM_CLIENT_REPLY_H
#define LF_LLM_CLIENT_REPLY_H

#include <stddef.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Extracts the fenced block holding the reply's one gpu.module.
///
/// `reply` is `len` bytes (need not be NUL-terminated; NULL allowed when
/// `len` is 0). A gpu.module op is the token `gpu.module` followed by `@`
/// (spaces allowed between), standing first on its line or right after a
/// `{` or `}`; mentions in prose, comments or inline code do not count.
/// Fences follow CommonMark: at most 3 spaces of indent, 3+ backticks or
/// tildes, closed by a run of the same character at least as long.
///
/// On success `*out_text` is a heap copy of the block's contents (the lines
/// between the fences, newlines kept; free() it) and `*out_line_offset` is
/// the number of reply lines before its first line, so line L (1-based) of
/// the text is line L + offset of the reply. For a bare reply the text is
/// the reply without its leading blank lines.
///
/// Fails with INVALID_ARGUMENT and `*out_text` NULL:
///  "reply has no gpu.module" (also for an empty reply, or one whose only
///  gpu.module is in prose outside the fences: the message says so);
///  "reply has N gpu.module ops; exactly one is required";
///  "reply's code fence opened at line N is never closed (truncated reply?)";
///  "reply has a gpu.module outside any fenced code block, mixed with prose";
///  "reply contains a NUL byte".
lf_status_t lf_reply_extract_gpu_module(const char *reply, size_t len,
                                        char **out_text,
                                        size_t *out_line_offset);

/// Counts gpu.module ops (as defined above) in `len` bytes of MLIR text.
size_t lf_reply_count_gpu_modules(const char *text, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* LF_LLM_CLIENT_REPLY_H */
