/* http_client_test.c - the chat client against a loopback fake server.
 *
 * Starts tests/fake_openai_server.py (LF_PYTHON3 and LF_FAKE_SERVER come
 * from CMake), reads its port, and runs one scenario per test: retries and
 * their waits, refusals, timeouts, caps, redirects, concurrency and the
 * API-key canary. Each test uses a fresh "#n" model suffix so the server's
 * hit counters start at zero.
 */
#include "llm_client/http_client.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/strbuf.h"
#include "base/testing.h"
#include "llm_client/tests/loopback_server.h"
#include "llm_client/reply.h"

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
  o->low_speed_limit_bps = 100;
  o->low_speed_time_s = 5;
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
  LF_EXPECT(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(req, "stream")));
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
  printf("  wall time: %ld ms\n", mono_ms() - start);
  stop_server();
  curl_global_cleanup();
  return lf_test_finish();
}
