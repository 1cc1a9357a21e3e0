/* testing.h - the minimal harness the C unit tests share.
 *
 * A test binary defines test functions with LF_TEST, lists them in main with
 * LF_RUN, and returns lf_test_finish(). Every failed expectation prints its
 * file:line and the failing expression, and makes the binary exit non-zero.
 */
#ifndef LF_BASE_TESTING_H
#define LF_BASE_TESTING_H

#include <stdio.h>
#include <string.h>

static int lf_test_failures_;
static int lf_test_count_;

#define LF_TEST(name) static void name(void)

#define LF_EXPECT(cond)                                                        \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond);       \
      ++lf_test_failures_;                                                     \
    }                                                                          \
  } while (0)

#define LF_EXPECT_STREQ(a, b)                                                  \
  do {                                                                         \
    const char *lf_a_ = (a), *lf_b_ = (b);                                     \
    if (!lf_a_ || !lf_b_ || strcmp(lf_a_, lf_b_) != 0) {                       \
      fprintf(stderr, "%s:%d: FAILED: %s == %s\n  got:      \"%s\"\n"          \
                      "  expected: \"%s\"\n",                                  \
              __FILE__, __LINE__, #a, #b, lf_a_ ? lf_a_ : "(null)",            \
              lf_b_ ? lf_b_ : "(null)");                                       \
      ++lf_test_failures_;                                                     \
    }                                                                          \
  } while (0)

#define LF_RUN(name)                                                           \
  do {                                                                         \
    int lf_before_ = lf_test_failures_;                                        \
    name();                                                                    \
    ++lf_test_count_;                                                          \
    printf("%s %s\n", lf_test_failures_ == lf_before_ ? "PASS" : "FAIL",       \
           #name);                                                             \
  } while (0)

static inline int lf_test_finish(void) {
  printf("%d tests, %d failed expectations\n", lf_test_count_,
         lf_test_failures_);
  return lf_test_failures_ ? 1 : 0;
}

#endif /* LF_BASE_TESTING_H */
