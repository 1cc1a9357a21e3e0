/* fuzz_chat_response.c - libFuzzer target for the chat-completions client's
 * response handling: the 2xx body parser (choices[0].message.content,
 * finish_reason, usage), the error-body parser behind every HTTP error
 * status, and the response-header callback (Retry-After, retry-after-ms,
 * Content-Length).
 *
 * http_client.c exposes none of these, so this file includes it to reach
 * its static functions (the file itself is unchanged). That ties the target
 * to internal names (parse_completion, http_error_status, on_header, job_t):
 * if they change, this file must follow. A public
 * lf_llm_parse_chat_response() would remove the coupling.
 *
 * Invariants beyond the sanitizers: the API key (a canary set in the
 * environment) never appears in a status message, whatever the server
 * sends; a successful parse has content; header parsing keeps the retry
 * delays in range.
 */
#include "llm_client/http_client.c"

#include <stdio.h>

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
  lf_llm_result_t result;
  memset(&result, 0, sizeof(result));
  job_t job;
  memset(&job, 0, sizeof(job));
  job.client = client;
  job.result = &result;
  job.retry_after_ms = job.retry_after_ms_hdr = -1;
  lf_strbuf_init(&job.body, client->opts.max_response_bytes);
  lf_status_t s = lf_strbuf_append(&job.body, data, size);
  if (s) { /* over the cap: the client would never have read it */
    lf_status_free(s);
    lf_strbuf_free(&job.body);
    return 0;
  }

  /* A 2xx body. */
  s = parse_completion(&job);
  check_no_key(s);
  if (!s)
    CHECK(result.content != NULL);
  else
    CHECK(result.content == NULL);
  lf_status_free(s);
  lf_llm_result_clear(&result);

  /* The same bytes as an error body, under a code picked from the input. */
  bool retryable = false;
  long http = codes[(size ? data[0] : 0) % (sizeof(codes) / sizeof(codes[0]))];
  s = http_error_status(&job, http, &retryable);
  CHECK(s != NULL);
  check_no_key(s);
  if (http == 400 || http == 401 || http == 403 || http == 404)
    CHECK(!retryable);
  lf_status_free(s);

  /* The same bytes as response header lines, one callback per line. */
  const char *p = (const char *)data, *end = p + size;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = (size_t)((nl ? nl + 1 : end) - p);
    char *line = malloc(n ? n : 1); /* exact size: ASan sees over-reads */
    if (!line)
      break;
    memcpy(line, p, n);
    size_t r = on_header(line, 1, n, &job);
    free(line);
    CHECK(r == n || r == 0);
    CHECK(job.retry_after_ms >= -1 && job.retry_after_ms <= 1000000000L);
    CHECK(job.retry_after_ms_hdr >= -1 &&
          job.retry_after_ms_hdr <= 1000000000L);
    p += n;
  }
  lf_strbuf_free(&job.body);
  return 0;
}
