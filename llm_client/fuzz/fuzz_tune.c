/* fuzz_tune.c - libFuzzer target for lf_tune_expand().
 *
 * Besides what the sanitizers catch, checks the documented contract on
 * every input: a failure is INVALID_ARGUMENT with a "line N: " message and
 * no set; a success has 1..16 variants, each with as many lines as the
 * input, an untuned set is a byte-identical copy, and every variant's text,
 * expanded again, is one untuned variant equal to itself.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_client/tune.h"

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "fuzz_tune: invariant failed: %s (line %d)\n", #cond,    \
              __LINE__);                                                       \
      abort();                                                                 \
    }                                                                          \
  } while (0)

static size_t newlines(const char *s, size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < n; ++i)
    count += s[i] == '\n';
  return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  lf_tune_set_t *set = (lf_tune_set_t *)1;
  lf_status_t s = lf_tune_expand(size ? text : NULL, size, &set);
  if (s) {
    CHECK(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
    CHECK(set == NULL);
    CHECK(strncmp(lf_status_message(s), "line ", 5) == 0);
    lf_status_free(s);
    return 0;
  }
  CHECK(set != NULL);
  CHECK(set->count >= 1 && set->count <= LF_TUNE_MAX_VARIANTS);
  CHECK(set->count + set->excluded <= LF_TUNE_MAX_VARIANTS);
  CHECK(set->knob_count <= LF_TUNE_MAX_DECLS);
  CHECK(set->tuned == (set->knob_count > 0));
  if (!set->tuned) {
    CHECK(set->count == 1 && set->excluded == 0);
    CHECK(strlen(set->variants[0].text) == size);
    CHECK(memcmp(set->variants[0].text, text, size) == 0);
    CHECK(strcmp(set->variants[0].label, "") == 0);
  }
  size_t lines = newlines(text, size);
  for (size_t i = 0; i < set->count; ++i) {
    const char *v = set->variants[i].text;
    size_t n = strlen(v);
    CHECK(newlines(v, n) == lines);
    CHECK(set->tuned == (set->variants[i].label[0] != '\0'));
    lf_tune_set_t *again = NULL;
    lf_status_t s2 = lf_tune_expand(v, n, &again);
    CHECK(s2 == NULL);
    CHECK(!again->tuned && again->count == 1);
    CHECK(strcmp(again->variants[0].text, v) == 0);
    lf_tune_set_destroy(again);
  }
  lf_tune_set_destroy(set);
  return 0;
}
