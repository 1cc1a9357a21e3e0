/* log_test.c - unit tests for base/log: levels, format, env parsing. */
#include "base/log.h"

#include <stdlib.h>

#include "base/testing.h"

/* Captures everything logged while `body` runs into a heap string. */
static char *capture_begin(FILE **out_f) {
  *out_f = tmpfile();
  lf_log_set_sink(*out_f);
  return NULL;
}

static char *capture_end(FILE *f) {
  lf_log_set_sink(NULL);
  long n = ftell(f);
  rewind(f);
  char *text = calloc((size_t)n + 1, 1);
  if (fread(text, 1, (size_t)n, f) != (size_t)n)
    text[0] = '\0';
  fclose(f);
  return text;
}

LF_TEST(level_filters_messages) {
  FILE *f;
  capture_begin(&f);
  lf_log_set_level(LF_LOG_WARN);
  LF_LOG_ERROR("e%d", 1);
  LF_LOG_WARN("w%d", 2);
  LF_LOG_INFO("hidden info");
  LF_LOG_DEBUG("hidden debug");
  char *text = capture_end(f);
  LF_EXPECT_STREQ(text, "llm-fuse: error: e1\nllm-fuse: warn: w2\n");
  free(text);
  lf_log_set_level(LF_LOG_INFO);
}

LF_TEST(debug_lines_carry_location) {
  FILE *f;
  capture_begin(&f);
  lf_log_set_level(LF_LOG_DEBUG);
  int line = __LINE__ + 1;
  LF_LOG_DEBUG("detail");
  char *text = capture_end(f);
  char want[256];
  snprintf(want, sizeof(want), "llm-fuse: debug: detail (%s:%d)\n", __FILE__,
           line);
  LF_EXPECT_STREQ(text, want);
  free(text);
  lf_log_set_level(LF_LOG_INFO);
}

LF_TEST(enabled_matches_level) {
  lf_log_set_level(LF_LOG_INFO);
  LF_EXPECT(lf_log_enabled(LF_LOG_ERROR));
  LF_EXPECT(lf_log_enabled(LF_LOG_INFO));
  LF_EXPECT(!lf_log_enabled(LF_LOG_DEBUG));
  lf_log_set_level((lf_log_level_t)77); /* clamped */
  LF_EXPECT(lf_log_get_level() == LF_LOG_TRACE);
  lf_log_set_level(LF_LOG_INFO);
}

LF_TEST(parse_levels) {
  lf_log_level_t level = LF_LOG_ERROR;
  LF_EXPECT(lf_log_level_parse("DeBuG", &level) == LF_OK);
  LF_EXPECT(level == LF_LOG_DEBUG);
  LF_EXPECT(lf_log_level_parse("trace", &level) == LF_OK);
  LF_EXPECT(level == LF_LOG_TRACE);
  lf_status_t s = lf_log_level_parse("loud", &level);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(strstr(lf_status_message(s), "'loud'") != NULL);
  lf_status_free(s);
  LF_EXPECT(level == LF_LOG_TRACE); /* untouched on failure */
}

LF_TEST(env_sets_level_and_bad_env_warns) {
  FILE *f;
  capture_begin(&f);
  lf_log_set_level(LF_LOG_INFO);
  setenv("LLM_FUSE_LOG", "error", 1);
  lf_log_init_from_env();
  LF_EXPECT(lf_log_get_level() == LF_LOG_ERROR);
  lf_log_set_level(LF_LOG_INFO);
  setenv("LLM_FUSE_LOG", "bogus", 1);
  lf_log_init_from_env();
  LF_EXPECT(lf_log_get_level() == LF_LOG_INFO);
  char *text = capture_end(f);
  LF_EXPECT(strstr(text, "llm-fuse: warn: LLM_FUSE_LOG ignored") == text);
  LF_EXPECT(strstr(text, "unknown log level 'bogus'") != NULL);
  free(text);
  unsetenv("LLM_FUSE_LOG");
}

LF_TEST(overlong_message_is_cut_not_lost) {
  FILE *f;
  capture_begin(&f);
  char *big = malloc(40000);
  memset(big, 'x', 39999);
  big[39999] = '\0';
  LF_LOG_ERROR("%s", big);
  char *text = capture_end(f);
  LF_EXPECT(strstr(text, "llm-fuse: error: ") == text);
  LF_EXPECT(strstr(text, "[message too long]") != NULL);
  free(text);
  free(big);
}

int main(void) {
  LF_RUN(level_filters_messages);
  LF_RUN(debug_lines_carry_location);
  LF_RUN(enabled_matches_level);
  LF_RUN(parse_levels);
  LF_RUN(env_sets_level_and_bad_env_warns);
  LF_RUN(overlong_message_is_cut_not_lost);
  return lf_test_finish();
}
