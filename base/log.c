/* log.c - levelled logging. */
#include "base/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <strings.h>

#include "base/strbuf.h"

static atomic_int current_level = LF_LOG_INFO;
static FILE *_Atomic current_sink = NULL;

static const char *const level_names[] = {"error", "warn", "info", "debug",
                                          "trace"};

void lf_log_set_level(lf_log_level_t level) {
  if (level < LF_LOG_ERROR)
    level = LF_LOG_ERROR;
  if (level > LF_LOG_TRACE)
    level = LF_LOG_TRACE;
  atomic_store(&current_level, (int)level);
}

lf_log_level_t lf_log_get_level(void) {
  return (lf_log_level_t)atomic_load(&current_level);
}

void lf_log_set_sink(FILE *sink) { atomic_store(&current_sink, sink); }

lf_status_t lf_log_level_parse(const char *text, lf_log_level_t *out_level) {
  for (int i = LF_LOG_ERROR; i <= LF_LOG_TRACE; ++i) {
    if (text && strcasecmp(text, level_names[i]) == 0) {
      *out_level = (lf_log_level_t)i;
      return LF_OK;
    }
  }
  return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                   "unknown log level '%s' (expected error, warn, info, "
                   "debug or trace)",
                   text ? text : "(null)");
}

void lf_log_init_from_env(void) {
  const char *env = getenv("LLM_FUSE_LOG");
  if (!env || !*env)
    return;
  lf_log_level_t level;
  lf_status_t s = lf_log_level_parse(env, &level);
  if (s) {
    lf_log_status(LF_LOG_WARN, "LLM_FUSE_LOG ignored", s);
    return;
  }
  lf_log_set_level(level);
}

bool lf_log_enabled(lf_log_level_t level) {
  return (int)level <= atomic_load(&current_level);
}

void lf_log_write(lf_log_level_t level, const char *file, int line,
                  const char *fmt, ...) {
  if (level < LF_LOG_ERROR || level > LF_LOG_TRACE)
    level = LF_LOG_ERROR;
  /* Build the whole line first so it goes out in one write. Long messages
   * are cut at the cap rather than dropped. */
  lf_strbuf_t line_buf;
  lf_strbuf_init(&line_buf, 16 * 1024);
  lf_status_free(
      lf_strbuf_appendf(&line_buf, "llm-fuse: %s: ", level_names[level]));
  va_list ap;
  va_start(ap, fmt);
  lf_status_t s = lf_strbuf_appendfv(&line_buf, fmt, ap);
  va_end(ap);
  if (s) {
    lf_status_free(s);
    lf_status_free(lf_strbuf_append_str(&line_buf, " [message too long]"));
  }
  if (level >= LF_LOG_DEBUG)
    lf_status_free(lf_strbuf_appendf(&line_buf, " (%s:%d)", file, line));
  lf_status_free(lf_strbuf_append(&line_buf, "\n", 1));

  FILE *sink = atomic_load(&current_sink);
  if (!sink)
    sink = stderr;
  fputs(lf_strbuf_cstr(&line_buf), sink);
  fflush(sink);
  lf_strbuf_free(&line_buf);
}

void lf_log_status(lf_log_level_t level, const char *prefix,
                   lf_status_t status) {
  if (!status)
    return;
  if (lf_log_enabled(level)) {
    char text[1024];
    lf_log_write(level, lf_status_file(status), lf_status_line(status),
                 "%s%s%s", prefix ? prefix : "", prefix ? ": " : "",
                 lf_status_format(status, text, sizeof(text)));
  }
  lf_status_free(status);
}
