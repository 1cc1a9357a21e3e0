/* fuzz_keyring.c - libFuzzer target for the trusted-keys parser,
 * lf_keyring_parse() (sign.h).
 *
 * Each input is parsed as it is, with its line ends turned into CRLF, and
 * twice over (the input, a newline, the input again).
 *
 * Invariants beyond the sanitizers: a failure is INVALID_ARGUMENT (or out
 * of memory) with no ring and a message "fuzz:<line>: ..." whose line is
 * one of the input's; success gives a ring of at most as many keys as the
 * input has lines. CRLF line ends change nothing (same code, same message,
 * same size). The doubled input fails at the same line when the input
 * fails, and holds the same keys when it succeeds (duplicates count once).
 * A ring trusts no key it was not given: an all-zero id is absent, and
 * verifying under it is PERMISSION_DENIED.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_client/sign.h"

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "fuzz_keyring: invariant failed: %s (line %d)\n",        \
              #cond, __LINE__);                                                \
      abort();                                                                 \
    }                                                                          \
  } while (0)

typedef struct outcome_s {
  lf_status_code_t code;
  char message[512];
  size_t line;   /* from the message; 0 on success */
  size_t keys;   /* on success */
} outcome_t;

static size_t count_lines(const char *data, size_t len) {
  size_t n = len ? 1 : 0;
  for (size_t i = 0; i < len; ++i)
    if (data[i] == '\n' && i + 1 < len)
      ++n;
  return n;
}

static outcome_t parse(const char *data, size_t len) {
  outcome_t o = {0};
  lf_keyring_t *ring = (lf_keyring_t *)1;
  lf_status_t s = lf_keyring_parse(data, len, "fuzz", &ring);
  o.code = lf_status_code(s);
  if (s) {
    CHECK(ring == NULL);
    CHECK(o.code == LF_STATUS_INVALID_ARGUMENT ||
          o.code == LF_STATUS_RESOURCE_EXHAUSTED);
    const char *m = lf_status_message(s);
    snprintf(o.message, sizeof(o.message), "%s", m);
    if (o.code == LF_STATUS_INVALID_ARGUMENT) {
      CHECK(strncmp(m, "fuzz:", 5) == 0);
      char *end = NULL;
      unsigned long line = strtoul(m + 5, &end, 10);
      CHECK(end && end != m + 5 && *end == ':');
      CHECK(line >= 1 && line <= count_lines(data, len));
      o.line = line;
    }
    lf_status_free(s);
    return o;
  }
  CHECK(ring != NULL);
  o.keys = lf_keyring_size(ring);
  CHECK(o.keys <= count_lines(data, len));
  CHECK(!lf_keyring_has(ring, "0000000000000000"));
  CHECK(!lf_keyring_has(ring, NULL));
  static const unsigned char sig[LF_SIGN_BYTES];
  s = lf_keyring_verify(ring, "0000000000000000", data, len, sig);
  CHECK(lf_status_code(s) == LF_STATUS_PERMISSION_DENIED);
  lf_status_free(s);
  lf_keyring_free(ring);
  return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
  const char *data = (const char *)bytes;
  outcome_t plain = parse(data, size);
  if (plain.code == LF_STATUS_RESOURCE_EXHAUSTED)
    return 0;

  /* CRLF line ends. */
  char *crlf = malloc(2 * size + 1);
  if (!crlf)
    return 0;
  size_t n = 0;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n')
      crlf[n++] = '\r';
    crlf[n++] = data[i];
  }
  outcome_t o = parse(crlf, n);
  free(crlf);
  if (o.code != LF_STATUS_RESOURCE_EXHAUSTED) {
    CHECK(o.code == plain.code);
    CHECK(o.keys == plain.keys);
    CHECK(strcmp(o.message, plain.message) == 0);
  }

  /* Twice over. */
  char *twice = malloc(2 * size + 1);
  if (!twice)
    return 0;
  memcpy(twice, data, size);
  twice[size] = '\n';
  memcpy(twice + size + 1, data, size);
  o = parse(twice, 2 * size + 1);
  free(twice);
  if (o.code != LF_STATUS_RESOURCE_EXHAUSTED) {
    CHECK(o.code == plain.code);
    CHECK(o.keys == plain.keys);
    if (plain.code)
      CHECK(o.line == plain.line);
  }
  return 0;
}
