/* status_test.c - unit tests for base/status. */
#include "base/status.h"

#include <stdlib.h>

#include "base/testing.h"

static lf_status_t fails_with(lf_status_code_t code) {
  return LF_STATUS(code, "failure %d", 42);
}

static lf_status_t propagates(lf_status_code_t code, int *reached_end) {
  LF_RETURN_IF_ERROR(fails_with(code));
  *reached_end = 1;
  return LF_OK;
}

LF_TEST(ok_is_null) {
  LF_EXPECT(LF_OK == NULL);
  LF_EXPECT(lf_status_is_ok(LF_OK));
  LF_EXPECT(lf_status_code(LF_OK) == LF_STATUS_OK);
  LF_EXPECT_STREQ(lf_status_message(LF_OK), "");
  char buf[32];
  LF_EXPECT_STREQ(lf_status_format(LF_OK, buf, sizeof(buf)), "OK");
  lf_status_free(LF_OK); /* must accept NULL */
}

LF_TEST(carries_code_message_and_location) {
  int line = __LINE__ + 1;
  lf_status_t s = LF_STATUS(LF_STATUS_NOT_FOUND, "no file '%s'", "a.mlir");
  LF_EXPECT(!lf_status_is_ok(s));
  LF_EXPECT(lf_status_code(s) == LF_STATUS_NOT_FOUND);
  LF_EXPECT_STREQ(lf_status_message(s), "no file 'a.mlir'");
  LF_EXPECT(strstr(lf_status_file(s), "status_test.c") != NULL);
  LF_EXPECT(lf_status_line(s) == line);
  char buf[256], want[256];
  snprintf(want, sizeof(want), "NOT_FOUND: no file 'a.mlir' (%s:%d)",
           lf_status_file(s), line);
  LF_EXPECT_STREQ(lf_status_format(s, buf, sizeof(buf)), want);
  lf_status_free(s);
}

LF_TEST(format_truncates_safely) {
  lf_status_t s = LF_STATUS(LF_STATUS_INTERNAL, "%s", "a long message here");
  char buf[8];
  lf_status_format(s, buf, sizeof(buf));
  LF_EXPECT(strlen(buf) == 7);
  LF_EXPECT_STREQ(buf, "INTERNA");
  lf_status_free(s);
}

LF_TEST(ok_code_is_not_silently_ok) {
  /* Making a status with the OK code is a bug; it must still be an error. */
  lf_status_t s = LF_STATUS(LF_STATUS_OK, "oops");
  LF_EXPECT(s != NULL);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INTERNAL);
  lf_status_free(s);
}

LF_TEST(return_if_error_propagates) {
  int reached = 0;
  lf_status_t s = propagates(LF_STATUS_UNAVAILABLE, &reached);
  LF_EXPECT(reached == 0);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_UNAVAILABLE);
  LF_EXPECT_STREQ(lf_status_message(s), "failure 42");
  lf_status_free(s);
}

LF_TEST(annotate_prefixes_and_keeps_origin) {
  lf_status_t s = LF_STATUS(LF_STATUS_DATA_LOSS, "checksum mismatch");
  int line = lf_status_line(s);
  s = lf_status_annotate(s, "cache entry %s", "ab12");
  LF_EXPECT_STREQ(lf_status_message(s), "cache entry ab12: checksum mismatch");
  LF_EXPECT(lf_status_code(s) == LF_STATUS_DATA_LOSS);
  LF_EXPECT(lf_status_line(s) == line);
  lf_status_free(s);
  LF_EXPECT(lf_status_annotate(LF_OK, "x") == LF_OK);
}

LF_TEST(code_names) {
  LF_EXPECT_STREQ(lf_status_code_name(LF_STATUS_INVALID_ARGUMENT),
                  "INVALID_ARGUMENT");
  LF_EXPECT_STREQ(lf_status_code_name(LF_STATUS_DATA_LOSS), "DATA_LOSS");
  LF_EXPECT_STREQ(lf_status_code_name((lf_status_code_t)999), "UNKNOWN_CODE");
  for (int c = 0; c < LF_STATUS_CODE_COUNT_; ++c)
    LF_EXPECT(lf_status_code_name((lf_status_code_t)c) != NULL);
}

int main(void) {
  LF_RUN(ok_is_null);
  LF_RUN(carries_code_message_and_location);
  LF_RUN(format_truncates_safely);
  LF_RUN(ok_code_is_not_silently_ok);
  LF_RUN(return_if_error_propagates);
  LF_RUN(annotate_prefixes_and_keeps_origin);
  LF_RUN(code_names);
  return lf_test_finish();
}
