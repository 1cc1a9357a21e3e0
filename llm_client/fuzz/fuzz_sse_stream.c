/* fuzz_sse_stream.c - libFuzzer target for the chat client's event-stream
 * parser (lf_llm_sse_parser_*), the code that reads every streamed reply.
 *
 * The input is a response body; its first byte seeds how it is cut into
 * pieces. It is parsed twice, whole and in those pieces, by two clients:
 * one with a 256-byte cap (so the caps are hit often) and one with 1 MiB.
 *
 * Invariants beyond the sanitizers: both parses end the same way (status
 * code, message, retryable, content, finish_reason, usage), because where
 * a body is split must never matter; the API key (a canary set in the
 * environment) never appears in a status message; a success has content
 * within the cap; a failure leaves the result empty.
 */
#include "llm_client/http_client.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANARY "sk-fuzz-canary-7f3a9c2e1b"

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "fuzz_sse_stream: invariant failed: %s (line %d)\n",     \
              #cond, __LINE__);                                                \
      abort();                                                                 \
    }                                                                          \
  } while (0)

static lf_llm_client_t *clients[2];
static const size_t caps[2] = {256, 1u << 20};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  setenv("LF_FUZZ_API_KEY", CANARY, 1);
  for (int i = 0; i < 2; ++i) {
    lf_llm_client_options_t o;
    lf_llm_client_options_init(&o);
    o.base_url = "http://127.0.0.1:9/v1"; /* never contacted */
    o.model = "fuzz-model";
    o.api_key_env = "LF_FUZZ_API_KEY";
    o.max_response_bytes = caps[i];
    lf_status_t s = lf_llm_client_create(&o, &clients[i]);
    if (s) {
      fprintf(stderr, "fuzz_sse_stream: cannot create a client: %s\n",
              lf_status_message(s));
      abort();
    }
  }
  return 0;
}

typedef struct outcome_s {
  lf_status_code_t code;
  bool retryable;
  char *message;
  lf_llm_result_t result;
} outcome_t;

/* Parses `body` in pieces of 1..16 bytes drawn from `seed`, or whole when
 * `seed` is 0. Each piece is a copy of its exact size, for ASan. */
static void parse(lf_llm_client_t *client, const uint8_t *body, size_t size,
                  uint32_t seed, outcome_t *out) {
  memset(out, 0, sizeof(*out));
  lf_llm_sse_parser_t *p = NULL;
  lf_status_t s = lf_llm_sse_parser_create(client, &p);
  CHECK(s == NULL && p != NULL);
  size_t at = 0;
  while (!s && at < size) {
    size_t n = size - at;
    if (seed) {
      seed = seed * 1664525u + 1013904223u;
      size_t want = 1 + (seed >> 16) % 16;
      n = want < n ? want : n;
    }
    char *piece = malloc(n);
    CHECK(piece != NULL);
    memcpy(piece, body + at, n);
    s = lf_llm_sse_parser_feed(p, piece, n, &out->retryable);
    free(piece);
    at += n;
  }
  if (!s)
    s = lf_llm_sse_parser_finish(p, &out->result, &out->retryable);
  out->code = lf_status_code(s);
  out->message = strdup(lf_status_message(s));
  CHECK(out->message != NULL);
  CHECK(strstr(out->message, CANARY) == NULL);
  lf_status_free(s);
  lf_llm_sse_parser_destroy(p);
}

static bool same_text(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > (1u << 20))
    return 0;
  uint32_t seed = 1u + data[0];
  for (int i = 0; i < 2; ++i) {
    outcome_t whole, split;
    parse(clients[i], data + 1, size - 1, 0, &whole);
    parse(clients[i], data + 1, size - 1, seed, &split);
    CHECK(whole.code == split.code);
    CHECK(whole.retryable == split.retryable);
    CHECK(strcmp(whole.message, split.message) == 0);
    CHECK(same_text(whole.result.content, split.result.content));
    CHECK(same_text(whole.result.finish_reason, split.result.finish_reason));
    CHECK(whole.result.usage.present == split.result.usage.present &&
          whole.result.usage.prompt_tokens ==
              split.result.usage.prompt_tokens &&
          whole.result.usage.completion_tokens ==
              split.result.usage.completion_tokens);
    if (whole.code == LF_STATUS_OK)
      CHECK(whole.result.content != NULL &&
            strlen(whole.result.content) <= caps[i]);
    else
      CHECK(whole.result.content == NULL && whole.result.finish_reason == NULL);
    free(whole.message);
    free(split.message);
    lf_llm_result_clear(&whole.result);
    lf_llm_result_clear(&split.result);
  }
  return 0;
}
