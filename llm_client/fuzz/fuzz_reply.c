/* fuzz_reply.c - libFuzzer target for lf_reply_extract_gpu_module().
 *
 * Besides what the sanitizers catch, checks the documented contract on
 * every input: a success yields NUL-free text holding exactly one
 * gpu.module, found verbatim in the reply at the line the offset names; a
 * failure is INVALID_ARGUMENT with no text.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_client/reply.h"

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "fuzz_reply: invariant failed: %s (line %d)\n", #cond,   \
              __LINE__);                                                       \
      abort();                                                                 \
    }                                                                          \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *reply = (const char *)data;
  char *text = (char *)1;
  size_t offset = 12345;
  lf_status_t s =
      lf_reply_extract_gpu_module(size ? reply : NULL, size, &text, &offset);
  if (s) {
    CHECK(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
    CHECK(text == NULL && offset == 0);
    CHECK(*lf_status_message(s) != '\0');
    lf_status_free(s);
    return 0;
  }
  CHECK(text != NULL);
  size_t n = strlen(text);
  CHECK(lf_reply_count_gpu_modules(text, n) == 1);
  /* Line `offset` (0-based) of the reply starts with the text. */
  size_t pos = 0;
  for (size_t line = 0; line < offset; ++line) {
    const char *nl = memchr(reply + pos, '\n', size - pos);
    CHECK(nl != NULL);
    pos = (size_t)(nl - reply) + 1;
  }
  CHECK(n <= size - pos && memcmp(reply + pos, text, n) == 0);
  free(text);
  return 0;
}
