/* log.h - levelled logging to stderr.
 *
 * One line per message, written with a single stdio call so lines from
 * concurrent threads do not interleave. The level comes from the
 * LLM_FUSE_LOG environment variable (error, warn, info, debug, trace) or from
 * lf_log_set_level(); the default is info. Debug and trace lines carry the
 * file:line that logged them. Nothing secret may ever be passed here.
 */
#ifndef LF_BASE_LOG_H
#define LF_BASE_LOG_H

#include <stdbool.h>
#include <stdio.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lf_log_level_e {
  LF_LOG_ERROR = 0,
  LF_LOG_WARN,
  LF_LOG_INFO,
  LF_LOG_DEBUG,
  LF_LOG_TRACE,
} lf_log_level_t;

/// Sets the most verbose level that is printed.
void lf_log_set_level(lf_log_level_t level);

/// The current level.
lf_log_level_t lf_log_get_level(void);

/// Redirects output (default: stderr). `sink` is borrowed; NULL restores
/// stderr. Meant for tests and tools that capture their own output.
void lf_log_set_sink(FILE *sink);

/// Parses "error", "warn", "info", "debug" or "trace" (case-insensitive).
/// Fails with INVALID_ARGUMENT naming the accepted values.
lf_status_t lf_log_level_parse(const char *text, lf_log_level_t *out_level);

/// Reads LLM_FUSE_LOG once and applies it; an unparsable value is reported
/// as a warning and ignored.
void lf_log_init_from_env(void);

/// True when a message at `level` would be printed.
bool lf_log_enabled(lf_log_level_t level);

/// Prints one line; use the LF_LOG_* macros instead.
void lf_log_write(lf_log_level_t level, const char *file, int line,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/// Logs `status` at `level` with a prefix, then frees it. Returns nothing:
/// this is for statuses that end their journey in a log.
void lf_log_status(lf_log_level_t level, const char *prefix,
                   lf_status_t status);

#define LF_LOG_AT_(level, ...)                                                 \
  do {                                                                         \
    if (lf_log_enabled(level))                                                 \
      lf_log_write((level), __FILE__, __LINE__, __VA_ARGS__);                  \
  } while (0)
#define LF_LOG_ERROR(...) LF_LOG_AT_(LF_LOG_ERROR, __VA_ARGS__)
#define LF_LOG_WARN(...) LF_LOG_AT_(LF_LOG_WARN, __VA_ARGS__)
#define LF_LOG_INFO(...) LF_LOG_AT_(LF_LOG_INFO, __VA_ARGS__)
#define LF_LOG_DEBUG(...) LF_LOG_AT_(LF_LOG_DEBUG, __VA_ARGS__)
#define LF_LOG_TRACE(...) LF_LOG_AT_(LF_LOG_TRACE, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif /* LF_BASE_LOG_H */
