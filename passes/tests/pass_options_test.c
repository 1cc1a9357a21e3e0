/* pass_options_test.c - parsing and validation of pass options in C. */
#include <stdlib.h>

#include "base/testing.h"
#include "passes/llm_fuse.h"

static const lf_pass_def_t *def = &lf_llm_fuse_pass;

LF_TEST(defaults) {
  lf_fuse_options_t o;
  LF_EXPECT(lf_pass_options_init(def, &o) == LF_OK);
  LF_EXPECT_STREQ(o.provider, "replay");
  LF_EXPECT_STREQ(o.arch, "sm_90a");
  LF_EXPECT_STREQ(o.api_key_env, "OPENAI_API_KEY");
  LF_EXPECT_STREQ(o.report, "");
  LF_EXPECT(o.max_attempts == 4 && o.max_concurrency == 8);
  LF_EXPECT(o.min_speedup == 1.0 && o.offline == false && o.remarks == true);
  lf_pass_options_free(def, &o);
  lf_pass_options_free(def, NULL);
}

LF_TEST(parse_all_forms) {
  lf_fuse_options_t o;
  LF_EXPECT(lf_pass_options_init(def, &o) == LF_OK);
  lf_status_t s = lf_pass_options_parse(
      def, &o,
      "  provider=none  report='/tmp/a b.json' model=\"m x\" "
      "endpoint={http://127.0.0.1:8000/v1} max-attempts=7 "
      "min-speedup=1.25 offline remarks=false ");
  LF_EXPECT(s == LF_OK);
  lf_status_free(s);
  LF_EXPECT_STREQ(o.provider, "none");
  LF_EXPECT_STREQ(o.report, "/tmp/a b.json");
  LF_EXPECT_STREQ(o.model, "m x");
  LF_EXPECT_STREQ(o.endpoint, "http://127.0.0.1:8000/v1");
  LF_EXPECT(o.max_attempts == 7);
  LF_EXPECT(o.min_speedup == 1.25);
  LF_EXPECT(o.offline == true && o.remarks == false);
  lf_pass_options_free(def, &o);
}

static void expect_error(const char *text, lf_status_code_t code,
                         const char *needle) {
  lf_fuse_options_t o;
  if (lf_pass_options_init(def, &o) != LF_OK) {
    LF_EXPECT(!"init failed");
    return;
  }
  lf_status_t s = lf_pass_options_parse(def, &o, text);
  LF_EXPECT(lf_status_code(s) == code);
  if (!strstr(lf_status_message(s), needle)) {
    fprintf(stderr, "  message: %s\n  wanted:  %s\n", lf_status_message(s),
            needle);
    LF_EXPECT(!"message lacks the expected text");
  }
  lf_status_free(s);
  lf_pass_options_free(def, &o);
}

LF_TEST(bad_values_are_named) {
  expect_error("provider=gpt", LF_STATUS_INVALID_ARGUMENT,
               "llm-fuse: bad value 'gpt' for option 'provider': expected one "
               "of openai|replay|none");
  expect_error("arch=sm_75", LF_STATUS_INVALID_ARGUMENT,
               "expected one of sm_80|sm_90|sm_90a");
  expect_error("max-attempts=0", LF_STATUS_OUT_OF_RANGE,
               "bad value '0' for option 'max-attempts': expected an integer "
               "in [1, 32]");
  expect_error("max-attempts=3x", LF_STATUS_INVALID_ARGUMENT,
               "expected an integer");
  expect_error("min-speedup=nan", LF_STATUS_INVALID_ARGUMENT,
               "expected a finite number");
  expect_error("offline=maybe", LF_STATUS_INVALID_ARGUMENT,
               "expected true or false");
  expect_error("colour=blue", LF_STATUS_INVALID_ARGUMENT,
               "llm-fuse: unknown option 'colour' (known: provider, endpoint");
  expect_error("report", LF_STATUS_INVALID_ARGUMENT,
               "option 'report' needs a value");
  expect_error("report='x", LF_STATUS_INVALID_ARGUMENT,
               "unterminated ' quote");
  expect_error("endpoint={a{b}", LF_STATUS_INVALID_ARGUMENT,
               "unterminated '{'");
}

LF_TEST(failed_set_leaves_value) {
  lf_fuse_options_t o;
  LF_EXPECT(lf_pass_options_init(def, &o) == LF_OK);
  lf_status_t s = lf_pass_options_set(def, &o, "provider", "bogus");
  LF_EXPECT(s != LF_OK);
  lf_status_free(s);
  LF_EXPECT_STREQ(o.provider, "replay");
  lf_pass_options_free(def, &o);
}

LF_TEST(copy_is_deep) {
  lf_fuse_options_t a, b;
  LF_EXPECT(lf_pass_options_init(def, &a) == LF_OK);
  LF_EXPECT(lf_pass_options_set(def, &a, "model", "first") == LF_OK);
  LF_EXPECT(lf_pass_options_copy(def, &b, &a) == LF_OK);
  LF_EXPECT(b.model != a.model);
  LF_EXPECT(lf_pass_options_set(def, &a, "model", "second") == LF_OK);
  LF_EXPECT_STREQ(b.model, "first");
  lf_pass_options_free(def, &a);
  lf_pass_options_free(def, &b);
}

LF_TEST(every_option_is_documented) {
  for (size_t i = 0; i < def->num_options; ++i) {
    LF_EXPECT(def->options[i].description &&
              strlen(def->options[i].description) > 10);
    LF_EXPECT(lf_pass_find_option(def, def->options[i].name) ==
              &def->options[i]);
  }
}

int main(void) {
  LF_RUN(defaults);
  LF_RUN(parse_all_forms);
  LF_RUN(bad_values_are_named);
  LF_RUN(failed_set_leaves_value);
  LF_RUN(copy_is_deep);
  LF_RUN(every_option_is_documented);
  return lf_test_finish();
}
