/* http_client_test.c - the chat client against a loopback fake server.
 *
 * Starts tests/fake_openai_server.py (LF_PYTHON3 and LF_FAKE_SERVER come
 * from CMake), reads its port, and runs one scenario per test: retries and
 * their waits, refusals, timeouts, caps, redirects, concurrency, the
 * API-key canary, and streamed replies (event streams split anywhere, keep-
 * alives, idle and broken streams, error events). Each test uses a fresh
 * "#n" model suffix so the server's hit counters start at zero. The
 * event-stream parser is also tested alone, without the network.
 */
#include "llm_client/http_client.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/strbuf.h"
#include "base/testing.h"
#include "llm_client/reply.h"
#include "llm_client/tests/loopback_server.h"

#define CANARY_ENV "LF_TEST_API_KEY"
#define CANARY_KEY "sk-canary-3f9a7c1e5b2d4f6081aa"
#define CANARY_TAIL "3f9a7c1e5b2d4f6081aa"

static int server_port;
static char base_url[64];
static int unique_id;

static long mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- The fake server
 * -------------------------------------------------------*/

static lf_test_server_t server = {.pid = -1, .stdin_fd = -1};

static bool start_server(void) {
  char *argv[] = {LF_PYTHON3, LF_FAKE_SERVER, NULL};
  if (!lf_test_server_start(&server, argv))
    return false;
  server_port = server.port;
  snprintf(base_url, sizeof(base_url), "%s", server.base_url);
  return true;
}

static void stop_server(void) { lf_test_server_stop(&server); }

static size_t collect(char *data, size_t size, size_t nmemb, void *user) {
  lf_status_t s = lf_strbuf_append(user, data, size * nmemb);
  if (s) {
    lf_status_free(s);
    return 0;
  }
  return size * nmemb;
}

/* GET /stats, parsed; NULL on any failure. */
static cJSON *fetch_stats(void) {
  char url[96];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/stats", server_port);
  lf_strbuf_t body;
  lf_strbuf_init(&body, 64u << 20);
  CURL *e = curl_easy_init();
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(e, CURLOPT_PROXY, "");
  CURLcode rc = curl_easy_perform(e);
  curl_easy_cleanup(e);
  cJSON *root = rc == CURLE_OK ? cJSON_ParseWithLength(lf_strbuf_cstr(&body),
                                                       lf_strbuf_len(&body))
                               : NULL;
  lf_strbuf_free(&body);
  return root;
}

/* An integer (or boolean as 0/1) field of the stats of `model`; -1 if none. */
static long stat_of(const char *model, const char *field) {
  cJSON *root = fetch_stats();
  const cJSON *entry = cJSON_GetObjectItemCaseSensitive(root, model);
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(entry, field);
  long value = cJSON_IsNumber(item) ? (long)item->valuedouble
               : cJSON_IsBool(item) ? (long)cJSON_IsTrue(item)
                                    : -1;
  cJSON_Delete(root);
  return value;
}

/* ---- Attempt records
 * -------------------------------------------------------*/

typedef struct record_s {
  size_t index;
  int attempt;
  lf_llm_attempt_outcome_t outcome;
  long http_code;
  lf_status_code_t code;
  long wait_ms;
  long elapsed_ms;
  long at_ms;
  char message[600];
} record_t;

static record_t records[64];
static int record_count;

static void record_hook(const lf_llm_attempt_t *a, void *user) {
  (void)user;
  if (record_count >= (int)(sizeof(records) / sizeof(records[0])))
    return;
  record_t *r = &records[record_count++];
  r->index = a->request_index;
  r->attempt = a->attempt;
  r->outcome = a->outcome;
  r->http_code = a->http_code;
  r->code = a->status_code;
  r->wait_ms = a->wait_ms;
  r->elapsed_ms = a->elapsed_ms;
  r->at_ms = mono_ms();
  snprintf(r->message, sizeof(r->message), "%s", a->message);
}

/* ---- Helpers
 * ---------------------------------------------------------------*/

static const char *fresh_model(const char *scenario) {
  static char names[8][96];
  static int next;
  char *name = names[next++ % 8];
  snprintf(name, sizeof(names[0]), "scenario:%s#%d", scenario, ++unique_id);
  return name;
}

static void test_options(lf_llm_client_options_t *o) {
  lf_llm_client_options_init(o);
  o->base_url = base_url;
  o->model = "scenario:ok";
  o->api_key_env = "LF_TEST_KEY_THAT_IS_NOT_SET";
  o->connect_timeout_ms = 2000;
  o->total_timeout_ms = 10000;
  o->stream_idle_timeout_ms = 5000;
  o->backoff_base_ms = 10;
  o->backoff_max_ms = 50;
  o->max_attempts = 5;
  o->jitter_seed = 42;
  o->on_attempt = record_hook;
}

static const lf_llm_message_t chat_messages[] = {
    {"system", "You write MLIR GPU kernels."},
    {"user", "Fuse \"matmul + relu\"\n\tfor sm_90a."},
};

/* Runs one request for `model` with a fresh client; fills `result`. */
static void run_one(const lf_llm_client_options_t *o, const char *model,
                    lf_llm_result_t *result) {
  record_count = 0;
  memset(result, 0, sizeof(*result));
  lf_llm_client_t *client = NULL;
  lf_status_t s = lf_llm_client_create(o, &client);
  LF_EXPECT(s == LF_OK);
  if (s) {
    fprintf(stderr, "  create: %s\n", lf_status_message(s));
    result->status = s;
    return;
  }
  lf_llm_request_t request = {chat_messages, 2, model, "test"};
  LF_EXPECT(lf_llm_client_run_batch(client, &request, 1, result) == LF_OK);
  lf_llm_client_destroy(client);
}

static bool contains(const char *haystack, const char *needle) {
  return haystack && strstr(haystack, needle) != NULL;
}

#define EXPECT_CONTAINS(text, needle)                                          \
  do {                                                                         \
    const char *lf_t_ = (text);                                                \
    if (!contains(lf_t_, (needle))) {                                          \
      fprintf(stderr, "%s:%d: FAILED: \"%s\" does not contain \"%s\"\n",       \
              __FILE__, __LINE__, lf_t_ ? lf_t_ : "(null)", (needle));         \
      ++lf_test_failures_;                                                     \
    }                                                                          \
  } while (0)

/* ---- Successes
 * -------------------------------------------------------------*/

LF_TEST(ok_returns_content_usage_and_sends_the_chat_request) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.temperature = 0.5;
  o.max_tokens = 1234;
  const char *model = fresh_model("ok");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.http_code == 200);
  LF_EXPECT(r.attempts == 1);
  EXPECT_CONTAINS(r.content, "gpu.module @kernels {");
  LF_EXPECT_STREQ(r.finish_reason, "stop");
  LF_EXPECT(r.usage.present && r.usage.prompt_tokens == 11 &&
            r.usage.completion_tokens == 22);
  LF_EXPECT(record_count == 1 && records[0].outcome == LF_LLM_ATTEMPT_OK &&
            records[0].http_code == 200 && records[0].wait_ms == 0);

  char *kernel = NULL;
  size_t offset = 99;
  lf_status_t s = lf_reply_extract_gpu_module(r.content, strlen(r.content),
                                              &kernel, &offset);
  LF_EXPECT(s == LF_OK);
  EXPECT_CONTAINS(kernel, "gpu.func @fused");
  LF_EXPECT(offset == 3);
  free(kernel);
  lf_status_free(s);

  /* What the server received. */
  cJSON *root = fetch_stats();
  const cJSON *entry = cJSON_GetObjectItemCaseSensitive(root, model);
  const cJSON *req = cJSON_GetObjectItemCaseSensitive(entry, "last_request");
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
  const cJSON *auth = cJSON_GetObjectItemCaseSensitive(entry, "auth");
  LF_EXPECT_STREQ(
      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "model")),
      model);
  LF_EXPECT(cJSON_GetArraySize(msgs) == 2);
  LF_EXPECT_STREQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                      cJSON_GetArrayItem(msgs, 0), "role")),
                  "system");
  LF_EXPECT_STREQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                      cJSON_GetArrayItem(msgs, 1), "content")),
                  "Fuse \"matmul + relu\"\n\tfor sm_90a.");
  LF_EXPECT(cJSON_GetNumberValue(
                cJSON_GetObjectItemCaseSensitive(req, "temperature")) == 0.5);
  LF_EXPECT(cJSON_GetNumberValue(
                cJSON_GetObjectItemCaseSensitive(req, "max_tokens")) == 1234);
  /* Streaming is asked for (the server ignores it and answers JSON). */
  LF_EXPECT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "stream")));
  LF_EXPECT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(req, "stream_options"),
      "include_usage")));
  /* No key set and a loopback server: no Authorization header at all. */
  LF_EXPECT(cJSON_GetArraySize(auth) == 1 &&
            cJSON_IsNull(cJSON_GetArrayItem(auth, 0)));
  cJSON_Delete(root);
  lf_llm_result_clear(&r);
}

LF_TEST(missing_usage_is_tolerated_and_optional_fields_omitted) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.temperature = -1; /* not sent */
  o.max_tokens = 0;   /* not sent */
  const char *model = fresh_model("ok-nousage");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.content != NULL);
  LF_EXPECT(!r.usage.present);
  cJSON *root = fetch_stats();
  const cJSON *req = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(root, model), "last_request");
  LF_EXPECT(req != NULL);
  LF_EXPECT(!cJSON_HasObjectItem(req, "temperature"));
  LF_EXPECT(!cJSON_HasObjectItem(req, "max_tokens"));
  cJSON_Delete(root);
  lf_llm_result_clear(&r);
}

/* ---- Retries
 * ---------------------------------------------------------------*/

LF_TEST(retry_after_seconds_is_honoured) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.backoff_base_ms = o.backoff_max_ms = 10000; /* would be >= 5 s */
  lf_llm_result_t r;
  run_one(&o, fresh_model("429-retry-after"), &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.attempts == 2);
  LF_EXPECT(r.elapsed_ms >= 1000 && r.elapsed_ms < 3000);
  LF_EXPECT(record_count == 2);
  LF_EXPECT(records[0].outcome == LF_LLM_ATTEMPT_RETRY &&
            records[0].http_code == 429 && records[0].wait_ms == 1000 &&
            records[0].code == LF_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_CONTAINS(records[0].message, "HTTP 429 [rate_limit_exceeded]");
  LF_EXPECT(records[1].outcome == LF_LLM_ATTEMPT_OK && records[1].attempt == 2);
  lf_llm_result_clear(&r);
}

LF_TEST(retry_after_ms_wins_over_retry_after) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.backoff_base_ms = o.backoff_max_ms = 10000;
  lf_llm_result_t r;
  run_one(&o, fresh_model("429-retry-after-ms"), &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.attempts == 2);
  LF_EXPECT(records[0].wait_ms == 300);
  LF_EXPECT(r.elapsed_ms >= 300 && r.elapsed_ms < 2500);
  lf_llm_result_clear(&r);
}

LF_TEST(retry_after_is_capped) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.retry_after_max_ms = 400; /* the server asks for an hour */
  lf_llm_result_t r;
  run_one(&o, fresh_model("429-retry-after-big"), &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.attempts == 2);
  LF_EXPECT(records[0].wait_ms == 400);
  LF_EXPECT(r.elapsed_ms >= 400 && r.elapsed_ms < 2500);
  lf_llm_result_clear(&r);
}

LF_TEST(backoff_is_exponential_with_seeded_jitter) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.backoff_base_ms = 100;
  o.backoff_max_ms = 150;
  o.jitter_seed = 7;
  long waits[2][2];
  for (int run = 0; run < 2; ++run) {
    lf_llm_result_t r;
    run_one(&o, fresh_model("429-backoff"), &r);
    LF_EXPECT(r.status == LF_OK);
    LF_EXPECT(r.attempts == 3);
    LF_EXPECT(record_count == 3);
    waits[run][0] = records[0].wait_ms;
    waits[run][1] = records[1].wait_ms;
    /* d = 100 then min(200, 150): waits in [d/2, d]. */
    LF_EXPECT(waits[run][0] >= 50 && waits[run][0] <= 100);
    LF_EXPECT(waits[run][1] >= 75 && waits[run][1] <= 150);
    LF_EXPECT(r.elapsed_ms >= waits[run][0] + waits[run][1]);
    lf_llm_result_clear(&r);
  }
  /* Same seed, same jitter. */
  LF_EXPECT(waits[0][0] == waits[1][0] && waits[0][1] == waits[1][1]);
}

LF_TEST(server_errors_are_retried_until_success) {
  lf_llm_client_options_t o;
  test_options(&o);
  const char *model = fresh_model("503x3");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.attempts == 4);
  LF_EXPECT(stat_of(model, "hits") == 4);
  LF_EXPECT(record_count == 4);
  for (int i = 0; i < 3 && i < record_count; ++i) {
    LF_EXPECT(records[i].outcome == LF_LLM_ATTEMPT_RETRY);
    LF_EXPECT(records[i].attempt == i + 1);
    LF_EXPECT(records[i].http_code == 503);
    LF_EXPECT(records[i].code == LF_STATUS_UNAVAILABLE);
  }
  LF_EXPECT(records[3].outcome == LF_LLM_ATTEMPT_OK);
  lf_llm_result_clear(&r);
}

LF_TEST(retries_stop_at_max_attempts) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.max_attempts = 3;
  const char *model = fresh_model("503-always");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(lf_status_code(r.status) == LF_STATUS_UNAVAILABLE);
  LF_EXPECT(r.attempts == 3);
  LF_EXPECT(r.http_code == 503);
  LF_EXPECT(r.content == NULL);
  EXPECT_CONTAINS(lf_status_message(r.status),
                  "HTTP 503 [server_error]: The engine is currently "
                  "overloaded (gave up after 3 attempts)");
  EXPECT_CONTAINS(lf_status_message(r.status), base_url);
  LF_EXPECT(stat_of(model, "hits") == 3);
  LF_EXPECT(record_count == 3 && records[2].outcome == LF_LLM_ATTEMPT_FAILED &&
            records[2].wait_ms == 0);
  lf_llm_result_clear(&r);
}

LF_TEST(non_json_error_body_is_quoted_and_retried) {
  lf_llm_client_options_t o;
  test_options(&o);
  lf_llm_result_t r;
  run_one(&o, fresh_model("502-html"), &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.attempts == 2);
  EXPECT_CONTAINS(records[0].message, "HTTP 502: <html><body><h1>502 Bad "
                                      "Gateway</h1>  </body></html>");
  lf_llm_result_clear(&r);
}

/* ---- Refusals that must not be retried
 * -------------------------------------*/

static void expect_single_failure(const char *scenario, lf_status_code_t code,
                                  long http, const char *needle) {
  lf_llm_client_options_t o;
  test_options(&o);
  const char *model = fresh_model(scenario);
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(lf_status_code(r.status) == code);
  LF_EXPECT(r.attempts == 1);
  LF_EXPECT(r.http_code == http);
  LF_EXPECT(stat_of(model, "hits") == 1);
  EXPECT_CONTAINS(lf_status_message(r.status), needle);
  LF_EXPECT(!contains(lf_status_message(r.status), "gave up"));
  LF_EXPECT(record_count == 1 && records[0].outcome == LF_LLM_ATTEMPT_FAILED);
  lf_llm_result_clear(&r);
}

LF_TEST(unauthorized_is_not_retried) {
  expect_single_failure("401", LF_STATUS_PERMISSION_DENIED, 401,
                        "HTTP 401 [invalid_api_key]: Incorrect API key");
}

LF_TEST(bad_request_is_not_retried) {
  expect_single_failure("400", LF_STATUS_INVALID_ARGUMENT, 400,
                        "HTTP 400 [invalid_request_error]: Invalid value for "
                        "'messages'");
}

LF_TEST(insufficient_quota_is_not_retried) {
  expect_single_failure("insufficient-quota", LF_STATUS_RESOURCE_EXHAUSTED, 429,
                        "HTTP 429 [insufficient_quota]: You exceeded your "
                        "current quota");
}

LF_TEST(vllm_and_ollama_error_shapes_are_read) {
  expect_single_failure("vllm-400", LF_STATUS_INVALID_ARGUMENT, 400,
                        "HTTP 400 [400]: This model's maximum context length "
                        "is 4096 tokens.");
  expect_single_failure("ollama-404", LF_STATUS_NOT_FOUND, 404,
                        "HTTP 404: model \"qwen\" not found, try pulling it "
                        "first");
}

LF_TEST(truncated_json_is_a_clear_error) {
  expect_single_failure("truncated-json", LF_STATUS_DATA_LOSS, 200,
                        "response is not valid JSON");
}

LF_TEST(null_content_reports_finish_reason) {
  expect_single_failure("content-null", LF_STATUS_DATA_LOSS, 200,
                        "response JSON has no choices[0].message.content "
                        "string (finish_reason: length)");
}

LF_TEST(redirect_to_http_is_refused) {
  /* Following the 307 would POST the same model again: a second hit. */
  expect_single_failure("redirect-http", LF_STATUS_PERMISSION_DENIED, 307,
                        "redirects are followed to https URLs only");
}

/* ---- Transport faults
 * --------------------------------------------------------*/

LF_TEST(slow_drip_hits_the_low_speed_limit) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.low_speed_limit_bps = 100;
  o.low_speed_time_s = 1;
  o.max_attempts = 2;
  const char *model = fresh_model("slow-drip");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(lf_status_code(r.status) == LF_STATUS_DEADLINE_EXCEEDED);
  LF_EXPECT(r.attempts == 2);
  LF_EXPECT(r.elapsed_ms >= 2000 && r.elapsed_ms < 8000);
  EXPECT_CONTAINS(lf_status_message(r.status), "Timeout was reached");
  LF_EXPECT(stat_of(model, "hits") == 2);
  LF_EXPECT(record_count == 2 && records[0].outcome == LF_LLM_ATTEMPT_RETRY &&
            records[0].code == LF_STATUS_DEADLINE_EXCEEDED);
  lf_llm_result_clear(&r);
}

LF_TEST(total_timeout_ends_a_slow_reply) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.total_timeout_ms = 500;
  o.max_attempts = 1;
  lf_llm_result_t r;
  run_one(&o, fresh_model("delay-2s"), &r);
  LF_EXPECT(lf_status_code(r.status) == LF_STATUS_DEADLINE_EXCEEDED);
  LF_EXPECT(r.attempts == 1);
  LF_EXPECT(r.elapsed_ms >= 450 && r.elapsed_ms < 1500);
  lf_llm_result_clear(&r);
}

LF_TEST(reset_connection_is_retried) {
  lf_llm_client_options_t o;
  test_options(&o);
  const char *model = fresh_model("reset");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.attempts == 2);
  LF_EXPECT(stat_of(model, "hits") == 2);
  LF_EXPECT(record_count == 2 && records[0].http_code == 0 &&
            records[0].code == LF_STATUS_UNAVAILABLE &&
            records[0].outcome == LF_LLM_ATTEMPT_RETRY);
  EXPECT_CONTAINS(records[0].message, "connection dropped");
  lf_llm_result_clear(&r);
}

LF_TEST(refused_connection_is_not_retried) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(a);
  bind(fd, (struct sockaddr *)&a, sizeof(a));
  getsockname(fd, (struct sockaddr *)&a, &len);
  close(fd); /* nobody listens there now */
  char url[64];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", ntohs(a.sin_port));
  lf_llm_client_options_t o;
  test_options(&o);
  o.base_url = url;
  lf_llm_result_t r;
  run_one(&o, "scenario:ok", &r);
  LF_EXPECT(lf_status_code(r.status) == LF_STATUS_UNAVAILABLE);
  LF_EXPECT(r.attempts == 1);
  EXPECT_CONTAINS(lf_status_message(r.status), "curl error 7");
  lf_llm_result_clear(&r);
}

LF_TEST(declared_oversize_body_is_refused) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.max_response_bytes = 64 << 10;
  const char *model = fresh_model("oversize");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(lf_status_code(r.status) == LF_STATUS_RESOURCE_EXHAUSTED);
  LF_EXPECT(r.attempts == 1);
  EXPECT_CONTAINS(lf_status_message(r.status),
                  "response exceeds the cap of 65536 bytes (transfer "
                  "aborted)");
  LF_EXPECT(stat_of(model, "hits") == 1);
  lf_llm_result_clear(&r);
}

LF_TEST(streamed_oversize_body_is_aborted_while_receiving) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.max_response_bytes = 256 << 10; /* 4 of the server's 256 pieces */
  const char *model = fresh_model("oversize-stream");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(lf_status_code(r.status) == LF_STATUS_RESOURCE_EXHAUSTED);
  LF_EXPECT(r.attempts == 1);
  LF_EXPECT(r.elapsed_ms < 3000); /* sending it all takes ~13 s */
  EXPECT_CONTAINS(lf_status_message(r.status), "exceeds the cap of 262144");
  /* The server notices the hang-up on its next write. */
  long aborted = 0;
  for (int i = 0; i < 40 && aborted != 1; ++i) {
    usleep(50000);
    aborted = stat_of(model, "aborted");
  }
  LF_EXPECT(aborted == 1);
  lf_llm_result_clear(&r);
}

/* ---- Replies that reach the extractor
 * ---------------------------------------*/

LF_TEST(reply_without_kernel_or_with_two_is_refused_by_extraction) {
  lf_llm_client_options_t o;
  test_options(&o);
  const char *scenarios[] = {"no-kernel", "two-modules"};
  const char *errors[] = {"reply has no gpu.module",
                          "reply has 2 gpu.module ops; exactly one is "
                          "required"};
  for (int i = 0; i < 2; ++i) {
    lf_llm_result_t r;
    run_one(&o, fresh_model(scenarios[i]), &r);
    LF_EXPECT(r.status == LF_OK && r.content);
    char *kernel = NULL;
    size_t offset = 0;
    lf_status_t s = lf_reply_extract_gpu_module(
        r.content, r.content ? strlen(r.content) : 0, &kernel, &offset);
    LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
    LF_EXPECT_STREQ(lf_status_message(s), errors[i]);
    LF_EXPECT(kernel == NULL);
    lf_status_free(s);
    lf_llm_result_clear(&r);
  }
}

/* ---- Concurrency
 * -------------------------------------------------------------*/

LF_TEST(sixteen_slow_requests_run_eight_at_a_time) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.max_concurrency = 8;
  const char *model = fresh_model("delay-2s");
  lf_llm_request_t requests[16];
  lf_llm_result_t results[16];
  for (int i = 0; i < 16; ++i)
    requests[i] = (lf_llm_request_t){chat_messages, 2, model, "slow"};
  lf_llm_client_t *client = NULL;
  LF_EXPECT(lf_llm_client_create(&o, &client) == LF_OK);
  record_count = 0;
  long start = mono_ms();
  LF_EXPECT(lf_llm_client_run_batch(client, requests, 16, results) == LF_OK);
  long elapsed = mono_ms() - start;
  lf_llm_client_destroy(client);
  int ok = 0;
  for (int i = 0; i < 16; ++i) {
    ok += results[i].status == LF_OK && results[i].attempts == 1 &&
          contains(results[i].content, "gpu.module");
    lf_llm_result_clear(&results[i]);
  }
  LF_EXPECT(ok == 16);
  printf("  16 x 2 s at max-concurrency 8: %ld ms\n", elapsed);
  LF_EXPECT(elapsed >= 3900 && elapsed < 7000);
  LF_EXPECT(stat_of(model, "max_inflight") == 8);
  LF_EXPECT(stat_of(model, "hits") == 16);
}

LF_TEST(a_retry_wait_does_not_block_other_requests) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.max_concurrency = 1; /* even with a single slot */
  lf_llm_request_t requests[2] = {
      {chat_messages, 2, fresh_model("429-retry-after-ms"), "waits"},
      {chat_messages, 2, fresh_model("ok"), "quick"},
  };
  lf_llm_result_t results[2];
  lf_llm_client_t *client = NULL;
  LF_EXPECT(lf_llm_client_create(&o, &client) == LF_OK);
  record_count = 0;
  LF_EXPECT(lf_llm_client_run_batch(client, requests, 2, results) == LF_OK);
  lf_llm_client_destroy(client);
  LF_EXPECT(results[0].status == LF_OK && results[0].attempts == 2);
  LF_EXPECT(results[1].status == LF_OK && results[1].attempts == 1);
  /* A fails and waits 300 ms; B runs and finishes inside that wait. */
  LF_EXPECT(record_count == 3);
  LF_EXPECT(records[0].index == 0 &&
            records[0].outcome == LF_LLM_ATTEMPT_RETRY);
  LF_EXPECT(records[1].index == 1 && records[1].outcome == LF_LLM_ATTEMPT_OK);
  LF_EXPECT(records[2].index == 0 && records[2].outcome == LF_LLM_ATTEMPT_OK);
  LF_EXPECT(records[2].at_ms - records[1].at_ms >= 200);
  LF_EXPECT(results[0].elapsed_ms >= 300);
  lf_llm_result_clear(&results[0]);
  lf_llm_result_clear(&results[1]);
}

LF_TEST(bad_request_in_a_batch_fails_alone) {
  lf_llm_client_options_t o;
  test_options(&o);
  lf_llm_request_t requests[2] = {
      {NULL, 0, fresh_model("ok"), "empty"},
      {chat_messages, 2, fresh_model("ok"), "fine"},
  };
  lf_llm_result_t results[2];
  lf_llm_client_t *client = NULL;
  LF_EXPECT(lf_llm_client_create(&o, &client) == LF_OK);
  LF_EXPECT(lf_llm_client_run_batch(client, requests, 2, results) == LF_OK);
  LF_EXPECT(lf_status_code(results[0].status) == LF_STATUS_INVALID_ARGUMENT);
  EXPECT_CONTAINS(lf_status_message(results[0].status), "has no messages");
  LF_EXPECT(results[0].attempts == 0);
  LF_EXPECT(results[1].status == LF_OK);
  /* complete() hands the request's status to the caller. */
  lf_llm_result_t single;
  lf_status_t s = lf_llm_client_complete(client, &requests[0], &single);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(single.status == LF_OK);
  lf_status_free(s);
  lf_llm_result_clear(&single);
  lf_llm_client_destroy(client);
  lf_llm_result_clear(&results[0]);
  lf_llm_result_clear(&results[1]);
}

/* ---- The key
 * -----------------------------------------------------------------*/

static char *read_all(FILE *f) {
  long n = ftell(f);
  rewind(f);
  char *text = calloc((size_t)n + 1, 1);
  if (text && fread(text, 1, (size_t)n, f) != (size_t)n)
    text[0] = '\0';
  return text;
}

static bool leaks_key(const char *text) {
  return contains(text, CANARY_KEY) || contains(text, CANARY_TAIL) ||
         contains(text, "canary");
}

LF_TEST(api_key_is_sent_but_never_logged_or_reported) {
  setenv(CANARY_ENV, CANARY_KEY, 1);
  FILE *log = tmpfile();
  lf_log_set_sink(log);
  lf_log_level_t level = lf_log_get_level();
  lf_log_set_level(LF_LOG_TRACE);

  lf_llm_client_options_t o;
  test_options(&o);
  o.api_key_env = CANARY_ENV;
  o.max_attempts = 2;
  const char *scenarios[] = {"ok", "401", "503-always", "truncated-json"};
  const char *models[4];
  bool leaked = false;
  for (int i = 0; i < 4; ++i) {
    models[i] = fresh_model(scenarios[i]);
    lf_llm_result_t r;
    run_one(&o, models[i], &r);
    LF_EXPECT((r.status == LF_OK) == (i == 0));
    leaked |= leaks_key(lf_status_message(r.status));
    leaked |= leaks_key(r.content);
    for (int k = 0; k < record_count; ++k)
      leaked |= leaks_key(records[k].message);
    if (i == 1)
      EXPECT_CONTAINS(lf_status_message(r.status),
                      "Incorrect API key provided: [REDACTED]");
    lf_llm_result_clear(&r);
  }
  lf_log_set_level(level);
  lf_log_set_sink(NULL);
  char *logged = read_all(log);
  fclose(log);
  LF_EXPECT(!leaked);
  LF_EXPECT(contains(logged, "retrying in")); /* the log did get lines */
  LF_EXPECT(!leaks_key(logged));
  free(logged);

  /* The server saw the key on every request. */
  cJSON *root = fetch_stats();
  int seen = 0, total = 0;
  for (int i = 0; i < 4; ++i) {
    const cJSON *auth = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, models[i]), "auth");
    const cJSON *item;
    cJSON_ArrayForEach(item, auth) {
      ++total;
      seen += contains(cJSON_GetStringValue(item), "Bearer " CANARY_KEY);
    }
  }
  LF_EXPECT(total == 1 + 1 + 2 + 1);
  LF_EXPECT(seen == total);
  cJSON_Delete(root);

  /* A key with a line break would inject headers: refused, not echoed. */
  setenv(CANARY_ENV, CANARY_KEY "\r\nX-Evil: 1", 1);
  lf_llm_client_t *client = NULL;
  lf_status_t s = lf_llm_client_create(&o, &client);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(client == NULL);
  EXPECT_CONTAINS(lf_status_message(s), CANARY_ENV);
  LF_EXPECT(!leaks_key(lf_status_message(s)));
  lf_status_free(s);
  unsetenv(CANARY_ENV);
}

/* ---- Streamed replies
 * ---------------------------------------------------------*/

/* What the sse-* scenarios stream: fake_openai_server.py's STREAM_TEXT. */
static const char stream_text[] = "```mlir\ngpu.module @streamed {\n}\n```\n"
                                  "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80 "
                                  "\"q\" \\ end\n";

LF_TEST(defaults_never_cut_a_slow_generation) {
  lf_llm_client_options_t o;
  lf_llm_client_options_init(&o);
  LF_EXPECT(o.stream);
  LF_EXPECT(o.total_timeout_ms == 1200000);
  LF_EXPECT(o.stream_idle_timeout_ms == 300000);
  LF_EXPECT(o.low_speed_limit_bps == 0 && o.low_speed_time_s == 0);
  test_options(&o);
  o.stream_idle_timeout_ms = -1;
  lf_llm_client_t *client = NULL;
  lf_status_t s = lf_llm_client_create(&o, &client);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT && !client);
  EXPECT_CONTAINS(lf_status_message(s), "stream idle timeout");
  lf_status_free(s);
}

LF_TEST(stream_accumulates_deltas_and_takes_usage_from_the_last_chunk) {
  lf_llm_client_options_t o;
  test_options(&o);
  const char *model = fresh_model("sse-ok");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.http_code == 200 && r.attempts == 1);
  LF_EXPECT_STREQ(r.content, stream_text);
  LF_EXPECT_STREQ(r.finish_reason, "stop");
  /* Only the last chunk (empty choices) has usage; the others say null. */
  LF_EXPECT(r.usage.present && r.usage.prompt_tokens == 7 &&
            r.usage.completion_tokens == 5);
  LF_EXPECT(stat_of(model, "hits") == 1);
  cJSON *root = fetch_stats();
  const cJSON *req = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(root, model), "last_request");
  LF_EXPECT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "stream")));
  LF_EXPECT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(req, "stream_options"),
      "include_usage")));
  cJSON_Delete(root);
  lf_llm_result_clear(&r);
}

LF_TEST(first_token_after_a_long_silence_with_keepalives_succeeds) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.stream_idle_timeout_ms = 1500; /* the server is silent but for ": "
                                      comments, every 0.5 s, for 3 s */
  const char *model = fresh_model("sse-keepalive");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.attempts == 1);
  LF_EXPECT(stat_of(model, "hits") == 1);
  LF_EXPECT(r.elapsed_ms >= 3000);
  LF_EXPECT_STREQ(r.content, stream_text);
  lf_llm_result_clear(&r);
}

LF_TEST(silent_stream_is_broken_by_the_idle_timeout_and_retried) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.stream_idle_timeout_ms = 1000; /* the first reply then says nothing
                                      for 4 s */
  const char *model = fresh_model("sse-silent");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.attempts == 2);
  LF_EXPECT(stat_of(model, "hits") == 2);
  LF_EXPECT_STREQ(r.content, stream_text);
  LF_EXPECT(record_count == 2);
  LF_EXPECT(records[0].outcome == LF_LLM_ATTEMPT_RETRY &&
            records[0].code == LF_STATUS_DEADLINE_EXCEEDED &&
            records[0].http_code == 200);
  EXPECT_CONTAINS(records[0].message, "the stream sent no byte for 1000 ms");
  LF_EXPECT(records[0].elapsed_ms >= 950 && records[0].elapsed_ms < 2500);
  LF_EXPECT(r.elapsed_ms < 3500); /* not the server's 4 s */
  lf_llm_result_clear(&r);
}

LF_TEST(events_split_at_odd_byte_boundaries_are_reassembled) {
  lf_llm_client_options_t o;
  test_options(&o);
  const char *model = fresh_model("sse-split");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.attempts == 1);
  LF_EXPECT_STREQ(r.content, stream_text);
  LF_EXPECT_STREQ(r.finish_reason, "stop");
  LF_EXPECT(r.usage.present && r.usage.prompt_tokens == 7 &&
            r.usage.completion_tokens == 5);
  lf_llm_result_clear(&r);
}

LF_TEST(stream_closed_without_done_after_a_finish_reason_is_complete) {
  lf_llm_client_options_t o;
  test_options(&o);
  const char *model = fresh_model("sse-no-done-finish");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.attempts == 1);
  LF_EXPECT(stat_of(model, "hits") == 1);
  LF_EXPECT_STREQ(r.content, stream_text);
  LF_EXPECT_STREQ(r.finish_reason, "stop");
  LF_EXPECT(!r.usage.present);
  lf_llm_result_clear(&r);
}

LF_TEST(stream_closed_without_done_or_finish_reason_is_retried_afresh) {
  lf_llm_client_options_t o;
  test_options(&o);
  const char *model = fresh_model("sse-no-done");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.attempts == 2);
  LF_EXPECT(stat_of(model, "hits") == 2);
  /* The broken attempt's "PARTIAL-ATTEMPT " is not kept. */
  LF_EXPECT_STREQ(r.content, stream_text);
  LF_EXPECT(record_count == 2 && records[0].outcome == LF_LLM_ATTEMPT_RETRY &&
            records[0].code == LF_STATUS_UNAVAILABLE);
  EXPECT_CONTAINS(records[0].message, "stream ended before [DONE]");
  lf_llm_result_clear(&r);

  o.max_attempts = 1;
  run_one(&o, fresh_model("sse-no-done"), &r);
  LF_EXPECT(lf_status_code(r.status) == LF_STATUS_UNAVAILABLE);
  LF_EXPECT(r.content == NULL && r.attempts == 1);
  EXPECT_CONTAINS(lf_status_message(r.status),
                  "stream ended before [DONE], without a finish_reason (3 "
                  "events, 16 bytes of content)");
  lf_llm_result_clear(&r);
}

LF_TEST(error_event_mid_stream_is_retried_and_scrubbed) {
  setenv(CANARY_ENV, CANARY_KEY, 1);
  lf_llm_client_options_t o;
  test_options(&o);
  o.api_key_env = CANARY_ENV;
  const char *model = fresh_model("sse-error");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  unsetenv(CANARY_ENV);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT(r.attempts == 2);
  LF_EXPECT(stat_of(model, "hits") == 2);
  LF_EXPECT_STREQ(r.content, stream_text);
  LF_EXPECT(record_count == 2 && records[0].outcome == LF_LLM_ATTEMPT_RETRY &&
            records[0].code == LF_STATUS_UNAVAILABLE);
  EXPECT_CONTAINS(records[0].message,
                  "the stream carried an error event [server_error]: The "
                  "server had an error while processing your request (key "
                  "[REDACTED]).");
  LF_EXPECT(!leaks_key(records[0].message));
  lf_llm_result_clear(&r);
}

LF_TEST(stream_request_to_a_server_that_answers_json_reads_the_json) {
  lf_llm_client_options_t o;
  test_options(&o);
  LF_EXPECT(o.stream);
  lf_llm_result_t r;
  run_one(&o, fresh_model("ok"), &r);
  LF_EXPECT(r.status == LF_OK && r.attempts == 1);
  EXPECT_CONTAINS(r.content, "gpu.module @kernels {");
  LF_EXPECT_STREQ(r.finish_reason, "stop");
  /* 11/22 are the JSON reply's counts (a stream reports 7/5). */
  LF_EXPECT(r.usage.present && r.usage.prompt_tokens == 11 &&
            r.usage.completion_tokens == 22);
  lf_llm_result_clear(&r);
}

LF_TEST(idle_timeout_applies_only_to_streams_after_their_headers) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.stream_idle_timeout_ms = 500;
  /* Each server is silent for 2 s: before its JSON headers, between JSON
   * headers and body, before an event stream's headers. */
  lf_llm_request_t requests[3] = {
      {chat_messages, 2, fresh_model("delay-2s"), "json-late"},
      {chat_messages, 2, fresh_model("json-slow-body"), "json-slow-body"},
      {chat_messages, 2, fresh_model("sse-late-headers"), "sse-late"},
  };
  lf_llm_result_t results[3];
  lf_llm_client_t *client = NULL;
  LF_EXPECT(lf_llm_client_create(&o, &client) == LF_OK);
  record_count = 0;
  LF_EXPECT(lf_llm_client_run_batch(client, requests, 3, results) == LF_OK);
  lf_llm_client_destroy(client);
  for (int i = 0; i < 3; ++i) {
    LF_EXPECT(results[i].status == LF_OK);
    LF_EXPECT(results[i].attempts == 1);
    LF_EXPECT(results[i].elapsed_ms >= 1950);
    if (results[i].status)
      fprintf(stderr, "  %s: %s\n", requests[i].tag,
              lf_status_message(results[i].status));
  }
  EXPECT_CONTAINS(results[0].content, "gpu.module @kernels {");
  EXPECT_CONTAINS(results[1].content, "gpu.module @kernels {");
  LF_EXPECT_STREQ(results[2].content, stream_text);
  for (int i = 0; i < 3; ++i)
    lf_llm_result_clear(&results[i]);
}

LF_TEST(stream_option_off_sends_no_stream_member) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.stream = false;
  const char *model = fresh_model("ok");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(r.status == LF_OK);
  cJSON *root = fetch_stats();
  const cJSON *req = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(root, model), "last_request");
  LF_EXPECT(req != NULL);
  LF_EXPECT(!cJSON_HasObjectItem(req, "stream"));
  LF_EXPECT(!cJSON_HasObjectItem(req, "stream_options"));
  cJSON_Delete(root);
  lf_llm_result_clear(&r);
  /* The reply's Content-Type decides: an event stream is still read. */
  run_one(&o, fresh_model("sse-ok"), &r);
  LF_EXPECT(r.status == LF_OK);
  LF_EXPECT_STREQ(r.content, stream_text);
  lf_llm_result_clear(&r);
}

LF_TEST(streamed_content_over_the_cap_is_refused) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.max_response_bytes = 16 << 10; /* the server streams 64 KiB */
  const char *model = fresh_model("sse-big");
  lf_llm_result_t r;
  run_one(&o, model, &r);
  LF_EXPECT(lf_status_code(r.status) == LF_STATUS_RESOURCE_EXHAUSTED);
  LF_EXPECT(r.attempts == 1 && r.content == NULL);
  LF_EXPECT(stat_of(model, "hits") == 1);
  EXPECT_CONTAINS(lf_status_message(r.status),
                  "the streamed content exceeds the cap of 16384 bytes");
  lf_llm_result_clear(&r);
}

LF_TEST(idle_timeouts_are_per_transfer_in_a_batch) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.stream_idle_timeout_ms = 1500;
  lf_llm_request_t requests[4];
  for (int i = 0; i < 4; ++i)
    requests[i] = (lf_llm_request_t){
        chat_messages, 2, fresh_model(i % 2 ? "sse-silent" : "sse-keepalive"),
        i % 2 ? "silent" : "keepalive"};
  lf_llm_result_t results[4];
  lf_llm_client_t *client = NULL;
  LF_EXPECT(lf_llm_client_create(&o, &client) == LF_OK);
  record_count = 0;
  long start = mono_ms();
  LF_EXPECT(lf_llm_client_run_batch(client, requests, 4, results) == LF_OK);
  long elapsed = mono_ms() - start;
  lf_llm_client_destroy(client);
  for (int i = 0; i < 4; ++i) {
    LF_EXPECT(results[i].status == LF_OK);
    LF_EXPECT_STREQ(results[i].content, stream_text);
    /* The quiet ones were cut and retried; the kept-alive ones not. */
    LF_EXPECT(results[i].attempts == (i % 2 ? 2 : 1));
    lf_llm_result_clear(&results[i]);
  }
  LF_EXPECT(elapsed >= 3000 && elapsed < 5000);
}

/* ---- The event-stream parser alone (no network)
 * -------------------------------*/

/* A recorded OpenAI-style stream, with what servers do besides: comments
 * (keep-alives), CRLF, LF and CR line ends, event and id fields, "data:"
 * without its space, one event in two data lines with a comment between
 * them, multi-byte UTF-8, usage in a last chunk with empty choices, and
 * bytes after [DONE]. */
static const char recorded_stream[] =
    ": OPENROUTER PROCESSING\r\n\r\n"
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":"
    "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
    "\"finish_reason\":null}],\"usage\":null}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"```mlir\\n"
    "gpu.module\"},\"finish_reason\":null}],\"usage\":null}\r\n\r\n"
    "event: message\nid: 3\nretry: 100\n"
    "data:{\"choices\":[{\"index\":0,\"delta\":\r\n"
    ": keep-alive inside an event\r\n"
    "data: {\"content\":\" @k {\\n}\\n```\\n\"}}]}\r\n\r\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"caf\xc3\xa9 "
    "\xe2\x86\x92 \xf0\x9f\x98\x80\"},\"finish_reason\":null}]}\r\r"
    ":\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
    "\"stop\"}]}\r\n\r\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":31,"
    "\"completion_tokens\":9,\"total_tokens\":40}}\n\n"
    "data: [DONE]\n\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"IGNORED\"}}]}\n\n"
    "garbage after the end";

static const char recorded_content[] =
    "```mlir\ngpu.module @k {\n}\n```\ncaf\xc3\xa9 \xe2\x86\x92 "
    "\xf0\x9f\x98\x80";

static lf_llm_client_t *parser_client(size_t cap, const char *key_env) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.max_response_bytes = cap;
  if (key_env)
    o.api_key_env = key_env;
  lf_llm_client_t *client = NULL;
  lf_status_t s = lf_llm_client_create(&o, &client);
  LF_EXPECT(s == LF_OK);
  lf_status_free(s);
  return client;
}

typedef struct parsed_s {
  lf_status_code_t code; /* of the first failing feed, else of finish */
  bool retryable;
  char message[600];
  lf_llm_result_t result;
} parsed_t;

/* Feeds `text` in pieces and finishes: `piece` bytes at a time, or, when
 * `piece` is 0, pieces of 1-16 bytes drawn from `seed`. Each piece is a
 * copy of its exact size, so a read past it is a real overread. */
static void parse_in_pieces(lf_llm_client_t *client, const char *text,
                            size_t len, size_t piece, uint32_t seed,
                            parsed_t *out) {
  memset(out, 0, sizeof(*out));
  lf_llm_sse_parser_t *p = NULL;
  lf_status_t s = lf_llm_sse_parser_create(client, &p);
  LF_EXPECT(s == LF_OK);
  size_t at = 0;
  while (!s && at < len) {
    size_t n = piece;
    if (n == 0) {
      seed = seed * 1664525u + 1013904223u;
      n = 1 + (seed >> 16) % 16;
    }
    if (n > len - at)
      n = len - at;
    char *copy = malloc(n);
    memcpy(copy, text + at, n);
    s = lf_llm_sse_parser_feed(p, copy, n, &out->retryable);
    free(copy);
    at += n;
  }
  if (!s)
    s = lf_llm_sse_parser_finish(p, &out->result, &out->retryable);
  out->code = lf_status_code(s);
  snprintf(out->message, sizeof(out->message), "%s", lf_status_message(s));
  lf_status_free(s);
  lf_llm_sse_parser_destroy(p);
}

static bool parsed_recording(const parsed_t *r) {
  return r->code == LF_STATUS_OK && r->result.content &&
         strcmp(r->result.content, recorded_content) == 0 &&
         r->result.finish_reason &&
         strcmp(r->result.finish_reason, "stop") == 0 &&
         r->result.usage.present && r->result.usage.prompt_tokens == 31 &&
         r->result.usage.completion_tokens == 9;
}

LF_TEST(sse_parser_gives_one_result_for_any_split) {
  lf_llm_client_t *client = parser_client(1 << 20, NULL);
  size_t len = sizeof(recorded_stream) - 1;
  parsed_t r;
  parse_in_pieces(client, recorded_stream, len, len, 0, &r);
  LF_EXPECT(parsed_recording(&r));
  LF_EXPECT_STREQ(r.result.content, recorded_content);
  lf_llm_result_clear(&r.result);
  int bad = 0, runs = 0;
  for (size_t piece = 1; piece <= 9; ++piece, ++runs) {
    parse_in_pieces(client, recorded_stream, len, piece, 0, &r);
    bad += !parsed_recording(&r);
    lf_llm_result_clear(&r.result);
  }
  for (uint32_t seed = 1; seed <= 300; ++seed, ++runs) {
    parse_in_pieces(client, recorded_stream, len, 0, seed, &r);
    bad += !parsed_recording(&r);
    lf_llm_result_clear(&r.result);
  }
  printf("  recorded stream: %d splits, %d differ\n", runs, bad);
  LF_EXPECT(bad == 0);
  lf_llm_client_destroy(client);
}

static void expect_parse(lf_llm_client_t *client, const char *text,
                         lf_status_code_t code, bool retryable,
                         const char *needle, const char *content) {
  for (size_t piece = 1; piece <= strlen(text); piece += strlen(text) - 1) {
    parsed_t r;
    parse_in_pieces(client, text, strlen(text), piece, 0, &r);
    if (r.code != code || r.retryable != retryable)
      fprintf(stderr, "  for \"%s\" in %zu-byte pieces: code %d, %s\n", text,
              piece, (int)r.code, r.message);
    LF_EXPECT(r.code == code);
    LF_EXPECT(r.retryable == retryable);
    if (needle)
      EXPECT_CONTAINS(r.message, needle);
    if (content)
      LF_EXPECT_STREQ(r.result.content, content);
    else
      LF_EXPECT(r.result.content == NULL);
    lf_llm_result_clear(&r.result);
    if (strlen(text) < 2)
      break;
  }
}

#define SSE_DELTA(text, finish)                                                \
  "data: {\"choices\":[{\"delta\":{\"content\":\"" text "\"},"                 \
  "\"finish_reason\":" finish "}]}\n\n"

LF_TEST(sse_parser_end_of_stream_rules) {
  lf_llm_client_t *client = parser_client(1 << 20, NULL);
  /* A finish_reason without [DONE]: complete. */
  expect_parse(client, SSE_DELTA("a", "\"length\""), LF_STATUS_OK, false, NULL,
               "a");
  /* Neither: broken, retryable. */
  expect_parse(client, SSE_DELTA("a", "null"), LF_STATUS_UNAVAILABLE, true,
               "stream ended before [DONE], without a finish_reason (1 "
               "events, 1 bytes of content)",
               NULL);
  /* A cut-off last event is dropped, not parsed. */
  expect_parse(client, SSE_DELTA("a", "null") "data: {\"choi",
               LF_STATUS_UNAVAILABLE, true, "stream ended before [DONE]", NULL);
  /* [DONE] without its blank line, or without any line end. */
  expect_parse(client, SSE_DELTA("a", "null") "data: [DONE]\n", LF_STATUS_OK,
               false, NULL, "a");
  expect_parse(client, SSE_DELTA("a", "null") "data: [DONE]", LF_STATUS_OK,
               false, NULL, "a");
  /* [DONE] with no content at all: no reply. */
  expect_parse(client,
               "data: {\"choices\":[{\"delta\":{},\"finish_reason\":"
               "\"content_filter\"}]}\n\ndata: [DONE]\n\n",
               LF_STATUS_DATA_LOSS, false,
               "the stream has no choices[0].delta.content string "
               "(finish_reason: content_filter)",
               NULL);
  /* Bytes after [DONE] are never looked at. */
  expect_parse(client, SSE_DELTA("a", "null") "data: [DONE]\n\ndata: {{{\n\n",
               LF_STATUS_OK, false, NULL, "a");

  /* Hostile token counts are clamped, not overflowed. */
  parsed_t huge;
  const char huge_usage[] =
      "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":"
      "\"stop\"}],\"usage\":{\"prompt_tokens\":1e70,\"completion_tokens\":"
      "-5}}\n\n";
  parse_in_pieces(client, huge_usage, strlen(huge_usage), 4, 0, &huge);
  LF_EXPECT(huge.code == LF_STATUS_OK && huge.result.usage.present);
  LF_EXPECT(huge.result.usage.prompt_tokens == LONG_MAX &&
            huge.result.usage.completion_tokens == 0);
  lf_llm_result_clear(&huge.result);

  /* A parser is finished once; an empty feed is fine. */
  lf_llm_sse_parser_t *p = NULL;
  LF_EXPECT(lf_llm_sse_parser_create(client, &p) == LF_OK);
  LF_EXPECT(lf_llm_sse_parser_feed(p, NULL, 0, NULL) == LF_OK);
  LF_EXPECT(!lf_llm_sse_parser_done(p));
  const char done[] = SSE_DELTA("b", "null") "data: [DONE]\n\n";
  LF_EXPECT(lf_llm_sse_parser_feed(p, done, strlen(done), NULL) == LF_OK);
  LF_EXPECT(lf_llm_sse_parser_done(p));
  lf_llm_result_t r = {0};
  LF_EXPECT(lf_llm_sse_parser_finish(p, &r, NULL) == LF_OK);
  LF_EXPECT_STREQ(r.content, "b");
  lf_llm_result_t again = {0};
  lf_status_t s = lf_llm_sse_parser_finish(p, &again, NULL);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_FAILED_PRECONDITION);
  LF_EXPECT(again.content == NULL);
  lf_status_free(s);
  lf_llm_result_clear(&r);
  lf_llm_sse_parser_destroy(p);
  lf_llm_sse_parser_destroy(NULL);
  lf_llm_client_destroy(client);
}

LF_TEST(sse_parser_errors_are_sticky_scrubbed_and_capped) {
  setenv(CANARY_ENV, CANARY_KEY, 1);
  lf_llm_client_t *client = parser_client(1 << 20, CANARY_ENV);
  unsetenv(CANARY_ENV);
  const char error_event[] =
      SSE_DELTA("a", "null") "data: {\"error\":{\"message\":\"overloaded; "
                             "your key " CANARY_KEY " was fine\",\"type\":"
                             "\"server_error\",\"code\":null}}\n\n";
  expect_parse(client, error_event, LF_STATUS_UNAVAILABLE, true,
               "the stream carried an error event [server_error]: "
               "overloaded; your key [REDACTED] was fine (after 1 bytes of "
               "content)",
               NULL);
  parsed_t pr;
  parse_in_pieces(client, error_event, strlen(error_event), 3, 0, &pr);
  LF_EXPECT(!leaks_key(pr.message));
  /* Sticky: later feeds and finish return the same failure. */
  lf_llm_sse_parser_t *p = NULL;
  LF_EXPECT(lf_llm_sse_parser_create(client, &p) == LF_OK);
  bool retryable = false;
  lf_status_t s =
      lf_llm_sse_parser_feed(p, error_event, strlen(error_event), &retryable);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_UNAVAILABLE && retryable);
  lf_status_free(s);
  const char more[] = SSE_DELTA("b", "\"stop\"") "data: [DONE]\n\n";
  retryable = false;
  s = lf_llm_sse_parser_feed(p, more, strlen(more), &retryable);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_UNAVAILABLE && retryable);
  lf_status_free(s);
  lf_llm_result_t r = {0};
  s = lf_llm_sse_parser_finish(p, &r, &retryable);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_UNAVAILABLE && retryable);
  LF_EXPECT(r.content == NULL);
  lf_status_free(s);
  lf_llm_sse_parser_destroy(p);
  /* {"error": "text"} too; a chunk that is not JSON is not retried. */
  expect_parse(client, "data: {\"error\": \"model is loading\"}\n\n",
               LF_STATUS_UNAVAILABLE, true,
               "error event: model is loading (after 0 bytes", NULL);
  expect_parse(client, SSE_DELTA("a", "null") "data: {\"choices\": [\n\n",
               LF_STATUS_DATA_LOSS, false,
               "event 2 of the stream is not valid JSON", NULL);
  lf_llm_client_destroy(client);

  /* Caps: the content, one event, and comments that need no buffer. */
  /* Each event below is 95 bytes; four deltas make 120 bytes of content. */
#define DIGITS30 "012345678901234567890123456789"
  client = parser_client(100, NULL);
  expect_parse(client,
               SSE_DELTA(DIGITS30, "null") SSE_DELTA(DIGITS30, "null")
                   SSE_DELTA(DIGITS30, "null") SSE_DELTA(DIGITS30, "null"),
               LF_STATUS_RESOURCE_EXHAUSTED, false,
               "the streamed content exceeds the cap of 100 bytes", NULL);
  expect_parse(client,
               "data: {\"choices\":[{\"delta\":{\"content\":\"a line that "
               "never ends" DIGITS30 DIGITS30 DIGITS30,
               LF_STATUS_RESOURCE_EXHAUSTED, false,
               "one event of the stream exceeds the cap of 100 bytes", NULL);
  /* Three data lines of one event, each short, 113 bytes together. */
  expect_parse(client,
               "data: {\"choices\":[{\"delta\":\ndata: {\"content\":\"0123456"
               "789\"}}]}\ndata: \"" DIGITS30 DIGITS30 "\"\n\n",
               LF_STATUS_RESOURCE_EXHAUSTED, false,
               "one event of the stream exceeds the cap of 100 bytes", NULL);
#undef DIGITS30
  char comment[2048];
  memset(comment, 'k', sizeof(comment));
  comment[0] = ':';
  snprintf(comment + 1500, sizeof(comment) - 1500,
           "\r\n\r\n" SSE_DELTA("ok", "\"stop\"") "data: [DONE]\n\n");
  expect_parse(client, comment, LF_STATUS_OK, false, NULL, "ok");
  lf_llm_client_destroy(client);
}

LF_TEST(response_headers_say_when_the_reply_is_an_event_stream) {
  lf_llm_client_t *client = parser_client(1 << 20, NULL);
  lf_llm_response_headers_t h;
  lf_llm_response_headers_init(&h);
  LF_EXPECT(!h.event_stream);
  const char *yes[] = {"Content-Type: text/event-stream\r\n",
                       "content-type: Text/Event-Stream; charset=utf-8\r\n",
                       "Content-Type:text/event-stream"};
  const char *no[] = {"Content-Type: application/json\r\n",
                      "Content-Type: text/event-streamed\r\n",
                      "X-Content-Type: text/event-stream\r\n"};
  for (int i = 0; i < 3; ++i) {
    h.event_stream = false;
    LF_EXPECT(lf_llm_parse_response_header(client, yes[i], strlen(yes[i]), &h));
    LF_EXPECT(h.event_stream);
    LF_EXPECT(lf_llm_parse_response_header(client, no[i], strlen(no[i]), &h));
    LF_EXPECT(h.event_stream == (i == 2)); /* another header changes none */
  }
  h.event_stream = true;
  LF_EXPECT(
      lf_llm_parse_response_header(client, "HTTP/1.1 200 OK\r\n", 17, &h));
  LF_EXPECT(!h.event_stream); /* a new response */
  lf_llm_client_destroy(client);
}

/* ---- Endpoint rules (no network I/O: create only)
 * ---------------------------*/

static lf_status_code_t create_code(const char *url, bool insecure,
                                    const char *key_env, char *message,
                                    size_t size, char *endpoint) {
  lf_llm_client_options_t o;
  test_options(&o);
  o.base_url = url;
  o.allow_insecure_http = insecure;
  if (key_env)
    o.api_key_env = key_env;
  lf_llm_client_t *client = NULL;
  lf_status_t s = lf_llm_client_create(&o, &client);
  lf_status_code_t code = lf_status_code(s);
  if (message)
    snprintf(message, size, "%s", lf_status_message(s));
  if (endpoint)
    snprintf(endpoint, 128, "%s", lf_llm_client_endpoint(client));
  lf_status_free(s);
  lf_llm_client_destroy(client);
  return code;
}

LF_TEST(https_is_required_except_to_loopback) {
  char msg[512], endpoint[128];
  long start = mono_ms();
  LF_EXPECT(create_code("http://api.example.com/v1", false, NULL, msg,
                        sizeof(msg), NULL) == LF_STATUS_FAILED_PRECONDITION);
  EXPECT_CONTAINS(msg, "plain http to 'api.example.com' is refused");
  LF_EXPECT(create_code("http://127.0.0.1.nip.io/v1", false, NULL, NULL, 0,
                        NULL) == LF_STATUS_FAILED_PRECONDITION);
  LF_EXPECT(create_code("http://[::2]:80/v1", false, NULL, NULL, 0, NULL) ==
            LF_STATUS_FAILED_PRECONDITION);
  LF_EXPECT(create_code("http://10.0.0.1/v1", false, NULL, NULL, 0, NULL) ==
            LF_STATUS_FAILED_PRECONDITION);
  LF_EXPECT(mono_ms() - start < 500); /* nothing was resolved or dialled */

  /* Loopback needs neither https nor a key. */
  LF_EXPECT(create_code("http://localhost:8080/v1", false, NULL, NULL, 0,
                        endpoint) == LF_STATUS_OK);
  LF_EXPECT_STREQ(endpoint, "http://localhost:8080/v1/chat/completions");
  LF_EXPECT(create_code("http://127.4.5.6:11434/v1/", false, NULL, NULL, 0,
                        endpoint) == LF_STATUS_OK);
  LF_EXPECT_STREQ(endpoint, "http://127.4.5.6:11434/v1/chat/completions");
  LF_EXPECT(create_code("http://[::1]:8000/v1", false, NULL, NULL, 0, NULL) ==
            LF_STATUS_OK);

  /* A non-loopback endpoint needs a key; the insecure option allows http. */
  LF_EXPECT(create_code("https://api.example.com/v1", false, NULL, msg,
                        sizeof(msg), NULL) == LF_STATUS_FAILED_PRECONDITION);
  EXPECT_CONTAINS(msg, "LF_TEST_KEY_THAT_IS_NOT_SET is unset or empty");
  setenv(CANARY_ENV, CANARY_KEY, 1);
  LF_EXPECT(create_code("https://api.example.com/v1", false, CANARY_ENV, NULL,
                        0, endpoint) == LF_STATUS_OK);
  LF_EXPECT_STREQ(endpoint, "https://api.example.com/v1/chat/completions");
  LF_EXPECT(create_code("http://gpu-box.lan:8000/v1", true, CANARY_ENV, NULL, 0,
                        NULL) == LF_STATUS_OK);
  unsetenv(CANARY_ENV);

  /* Malformed URLs. */
  LF_EXPECT(create_code("ftp://127.0.0.1/v1", false, NULL, NULL, 0, NULL) ==
            LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(create_code("127.0.0.1:8000/v1", false, NULL, NULL, 0, NULL) ==
            LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(create_code("", false, NULL, NULL, 0, NULL) ==
            LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(create_code("https://user:hunter2@api.example.com/v1", false, NULL,
                        msg, sizeof(msg), NULL) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(!contains(msg, "hunter2"));
  LF_EXPECT(create_code("http://127.0.0.1/v1?key=x", false, NULL, NULL, 0,
                        NULL) == LF_STATUS_INVALID_ARGUMENT);
}

LF_TEST(bad_options_are_rejected) {
  lf_llm_client_options_t o;
  lf_llm_client_t *client = (lf_llm_client_t *)&o; /* must be reset to NULL */
  test_options(&o);
  o.max_concurrency = 0;
  lf_status_t s = lf_llm_client_create(&o, &client);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT && !client);
  lf_status_free(s);
  test_options(&o);
  o.temperature = NAN;
  s = lf_llm_client_create(&o, &client);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  lf_status_free(s);
  test_options(&o);
  o.api_key_env = "1 BAD";
  s = lf_llm_client_create(&o, &client);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  lf_status_free(s);
  s = lf_llm_client_create(NULL, &client);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  lf_status_free(s);
  s = lf_llm_client_run_batch(NULL, NULL, 0, NULL);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  lf_status_free(s);
  lf_llm_client_destroy(NULL);
  lf_llm_result_clear(NULL);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  unsetenv(CANARY_ENV);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (!start_server()) {
    fprintf(stderr, "could not start %s %s\n", LF_PYTHON3, LF_FAKE_SERVER);
    stop_server();
    return 1;
  }
  long start = mono_ms();
  LF_RUN(ok_returns_content_usage_and_sends_the_chat_request);
  LF_RUN(missing_usage_is_tolerated_and_optional_fields_omitted);
  LF_RUN(retry_after_seconds_is_honoured);
  LF_RUN(retry_after_ms_wins_over_retry_after);
  LF_RUN(retry_after_is_capped);
  LF_RUN(backoff_is_exponential_with_seeded_jitter);
  LF_RUN(server_errors_are_retried_until_success);
  LF_RUN(retries_stop_at_max_attempts);
  LF_RUN(non_json_error_body_is_quoted_and_retried);
  LF_RUN(unauthorized_is_not_retried);
  LF_RUN(bad_request_is_not_retried);
  LF_RUN(insufficient_quota_is_not_retried);
  LF_RUN(vllm_and_ollama_error_shapes_are_read);
  LF_RUN(truncated_json_is_a_clear_error);
  LF_RUN(null_content_reports_finish_reason);
  LF_RUN(redirect_to_http_is_refused);
  LF_RUN(slow_drip_hits_the_low_speed_limit);
  LF_RUN(total_timeout_ends_a_slow_reply);
  LF_RUN(reset_connection_is_retried);
  LF_RUN(refused_connection_is_not_retried);
  LF_RUN(declared_oversize_body_is_refused);
  LF_RUN(streamed_oversize_body_is_aborted_while_receiving);
  LF_RUN(reply_without_kernel_or_with_two_is_refused_by_extraction);
  LF_RUN(sixteen_slow_requests_run_eight_at_a_time);
  LF_RUN(a_retry_wait_does_not_block_other_requests);
  LF_RUN(bad_request_in_a_batch_fails_alone);
  LF_RUN(api_key_is_sent_but_never_logged_or_reported);
  LF_RUN(https_is_required_except_to_loopback);
  LF_RUN(bad_options_are_rejected);
  LF_RUN(defaults_never_cut_a_slow_generation);
  LF_RUN(stream_accumulates_deltas_and_takes_usage_from_the_last_chunk);
  LF_RUN(first_token_after_a_long_silence_with_keepalives_succeeds);
  LF_RUN(silent_stream_is_broken_by_the_idle_timeout_and_retried);
  LF_RUN(events_split_at_odd_byte_boundaries_are_reassembled);
  LF_RUN(stream_closed_without_done_after_a_finish_reason_is_complete);
  LF_RUN(stream_closed_without_done_or_finish_reason_is_retried_afresh);
  LF_RUN(error_event_mid_stream_is_retried_and_scrubbed);
  LF_RUN(stream_request_to_a_server_that_answers_json_reads_the_json);
  LF_RUN(idle_timeout_applies_only_to_streams_after_their_headers);
  LF_RUN(stream_option_off_sends_no_stream_member);
  LF_RUN(streamed_content_over_the_cap_is_refused);
  LF_RUN(idle_timeouts_are_per_transfer_in_a_batch);
  LF_RUN(sse_parser_gives_one_result_for_any_split);
  LF_RUN(sse_parser_end_of_stream_rules);
  LF_RUN(sse_parser_errors_are_sticky_scrubbed_and_capped);
  LF_RUN(response_headers_say_when_the_reply_is_an_event_stream);
  printf("  wall time: %ld ms\n", mono_ms() - start);
  stop_server();
  curl_global_cleanup();
  return lf_test_finish();
}
