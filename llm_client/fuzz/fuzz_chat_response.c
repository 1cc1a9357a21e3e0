/* fuzz_chat_response.c - libFuzzer target for the chat-completions client's
 * response handling: the 2xx body parser (choices[0].message.content,
 * finish_reason, usage), the error-body parser behind every HTTP error
 * status, and the response-header parser (Retry-After, retry-after-ms,
 * Content-Length), all through the public lf_llm_parse_chat_response()
 * and lf_llm_parse_response_header() that the client itself uses.
 *
 * Invariants beyond the sanitizers: the API key (a canary set in the
 * environment) never appears in a status message, whatever the server
 * sends; a successful parse has content; header parsing keeps the retry
 * delays in range.
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
      fprintf(stderr, "fuzz_chat_response: invariant failed: %s (line %d)\n",  \
              #cond, __LINE__);                                                \
      abort();                                                                 \
    }                                                                          \
  } while (0)

static lf_llm_client_t *client;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  setenv("LF_FUZZ_API_KEY", CANARY, 1);
  lf_llm_client_options_t o;
  lf_llm_client_options_init(&o);
  o.base_url = "http://127.0.0.1:9/v1"; /* never contacted */
  o.model = "fuzz-model";
  o.api_key_env = "LF_FUZZ_API_KEY";
  o.max_response_bytes = 1 << 20;
  lf_status_t s = lf_llm_client_create(&o, &client);
  if (s) {
    fprintf(stderr, "fuzz_chat_response: cannot create a client: %s\n",
            lf_status_message(s));
    abort();
  }
  return 0;
}

static void check_no_key(lf_status_t s) {
  if (s)
    CHECK(strstr(lf_status_message(s), CANARY) == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const long codes[] = {400, 401, 403, 404, 408, 409, 413,
                               422, 429, 500, 503, 302, 418, 200};
  if (size > (1u << 20))
    return 0; /* over the cap: the client would never have read it */
  const char *body = (const char *)data;

  /* A 2xx body. */
  lf_llm_result_t result;
  bool retryable = false;
  lf_status_t s =
      lf_llm_parse_chat_response(client, 200, body, size, &result, &retryable);
  check_no_key(s);
  if (!s)
    CHECK(result.content != NULL);
  else
    CHECK(result.content == NULL);
  CHECK(!retryable);
  lf_status_free(s);
  lf_llm_result_clear(&result);

  /* The same bytes as an error body, under a code picked from the input. */
  long http = codes[(size ? data[0] : 0) % (sizeof(codes) / sizeof(codes[0]))];
  s = lf_llm_parse_chat_response(client, http, body, size, &result, &retryable);
  if (http == 200) {
    lf_status_free(s);
  } else {
    CHECK(s != NULL);
    check_no_key(s);
    if (http == 400 || http == 401 || http == 403 || http == 404)
      CHECK(!retryable);
    lf_status_free(s);
  }
  lf_llm_result_clear(&result);

  /* The same bytes as response header lines, one call per line. */
  lf_llm_response_headers_t hdr;
  lf_llm_response_headers_init(&hdr);
  const char *p = body, *end = p + size;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = (size_t)((nl ? nl + 1 : end) - p);
    char *line = malloc(n ? n : 1); /* exact size: ASan sees over-reads */
    if (!line)
      break;
    memcpy(line, p, n);
    bool ok = lf_llm_parse_response_header(client, line, n, &hdr);
    free(line);
    CHECK(ok || hdr.too_large);
    CHECK(hdr.retry_after_ms >= -1 && hdr.retry_after_ms <= 1000000000L);
    CHECK(hdr.retry_after_ms_header >= -1 &&
          hdr.retry_after_ms_header <= 1000000000L);
    p += n;
  }
  return 0;
}
