/* strbuf_test.c - unit tests for base/strbuf. */
#include "base/strbuf.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/testing.h"

LF_TEST(empty_buffer_is_empty_string) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 16);
  LF_EXPECT(lf_strbuf_len(&b) == 0);
  LF_EXPECT_STREQ(lf_strbuf_cstr(&b), "");
  char *taken = lf_strbuf_take(&b);
  LF_EXPECT(taken && taken[0] == '\0');
  free(taken);
  lf_strbuf_free(&b);
  lf_strbuf_free(NULL);
}

LF_TEST(appends_and_grows) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 1 << 20);
  for (int i = 0; i < 1000; ++i)
    LF_EXPECT(lf_strbuf_appendf(&b, "%03d,", i) == LF_OK);
  LF_EXPECT(lf_strbuf_len(&b) == 4000);
  LF_EXPECT(strncmp(lf_strbuf_cstr(&b), "000,001,002,", 12) == 0);
  LF_EXPECT(strcmp(lf_strbuf_cstr(&b) + 3996, "999,") == 0);
  LF_EXPECT(lf_strbuf_cstr(&b)[4000] == '\0');
  lf_strbuf_free(&b);
}

LF_TEST(binary_data_with_nul_bytes) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 64);
  LF_EXPECT(lf_strbuf_append(&b, "a\0b", 3) == LF_OK);
  LF_EXPECT(lf_strbuf_len(&b) == 3);
  LF_EXPECT(memcmp(lf_strbuf_cstr(&b), "a\0b", 4) == 0);
  lf_strbuf_free(&b);
}

LF_TEST(cap_is_enforced_and_buffer_unchanged) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 10);
  LF_EXPECT(lf_strbuf_append_str(&b, "0123456789") == LF_OK); /* exactly cap */
  lf_status_t s = lf_strbuf_append_str(&b, "x");
  LF_EXPECT(lf_status_code(s) == LF_STATUS_RESOURCE_EXHAUSTED);
  lf_status_free(s);
  LF_EXPECT_STREQ(lf_strbuf_cstr(&b), "0123456789");

  lf_strbuf_reset(&b);
  LF_EXPECT(lf_strbuf_append_str(&b, "abc") == LF_OK);
  s = lf_strbuf_appendf(&b, "%s", "12345678"); /* 3 + 8 > 10: all or nothing */
  LF_EXPECT(lf_status_code(s) == LF_STATUS_RESOURCE_EXHAUSTED);
  lf_status_free(s);
  LF_EXPECT_STREQ(lf_strbuf_cstr(&b), "abc");
  /* Never allocates past what the cap can use. */
  LF_EXPECT(b.alloc <= 11);
  lf_strbuf_free(&b);
}

LF_TEST(huge_append_does_not_overflow) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 100);
  LF_EXPECT(lf_strbuf_append_str(&b, "abc") == LF_OK);
  lf_status_t s = lf_strbuf_append(&b, "x", SIZE_MAX - 1);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_RESOURCE_EXHAUSTED);
  lf_status_free(s);
  LF_EXPECT_STREQ(lf_strbuf_cstr(&b), "abc");
  lf_strbuf_free(&b);
}

LF_TEST(truncate_and_take) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 100);
  LF_EXPECT(lf_strbuf_append_str(&b, "hello world") == LF_OK);
  lf_strbuf_truncate(&b, 5);
  LF_EXPECT_STREQ(lf_strbuf_cstr(&b), "hello");
  lf_strbuf_truncate(&b, 50); /* longer: no-op */
  LF_EXPECT_STREQ(lf_strbuf_cstr(&b), "hello");
  char *s = lf_strbuf_take(&b);
  LF_EXPECT_STREQ(s, "hello");
  LF_EXPECT(lf_strbuf_len(&b) == 0 && b.data == NULL);
  free(s);
  /* Usable again after take. */
  LF_EXPECT(lf_strbuf_append_str(&b, "again") == LF_OK);
  LF_EXPECT_STREQ(lf_strbuf_cstr(&b), "again");
  lf_strbuf_free(&b);
}

int main(void) {
  LF_RUN(empty_buffer_is_empty_string);
  LF_RUN(appends_and_grows);
  LF_RUN(binary_data_with_nul_bytes);
  LF_RUN(cap_is_enforced_and_buffer_unchanged);
  LF_RUN(huge_append_does_not_overflow);
  LF_RUN(truncate_and_take);
  return lf_test_finish();
}
