/* http_client.c - chat completions over libcurl multi, with retries.
 *
 * One batch drives one curl multi handle: jobs start while fewer than
 * max_concurrency are in flight, finished transfers are classified
 * (success, retryable, final), and a retryable job is parked with a
 * ready-at time instead of sleeping, so its wait overlaps the others.
 * CURLcodes, HTTP codes and cJSON failures each become statuses in one
 * function. Server-provided text is scrubbed of the key before it goes
 * anywhere.
 */
#include "llm_client/http_client.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <ctype.h>
#include <curl/curl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/strbuf.h"

#if LIBCURL_VERSION_NUM < 0x075500
#error "llm_client needs libcurl >= 7.85 (CURLOPT_REDIR_PROTOCOLS_STR)"
#endif

#define SERVER_TEXT_MAX 300 /* bytes of server text quoted in a message */
#define BASE_URL_MAX 2048
#define USER_AGENT "llm-fuse/0.1"
#define REDACTED "[REDACTED]"

struct lf_llm_client_s {
  lf_llm_client_options_t opts; /* numeric settings; string members NULL */
  char *model;                  /* NULL: every request must name one */
  char *api_key_env;
  char *api_key;  /* secret; NULL when unset; wiped on free */
  char *endpoint; /* {base}/chat/completions; printable */
  bool loopback;
  bool https;
  struct curl_slist *headers; /* includes the Authorization line: secret */
  CURLM *multi;
  uint64_t rng; /* splitmix64 state for the jitter */
};

/* ---- Small helpers -------------------------------------------------------*/

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result = CURLE_FAILED_INIT;

static void curl_init_once(void) {
  curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Frees a string that may hold a secret, wiping it first. */
static void wipe_free(char *text) {
  if (!text)
    return;
  explicit_bzero(text, strlen(text));
  free(text);
}

static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Backoff after failed attempt `attempt` (1-based): the exponential delay
 * d = min(cap, base * 2^(attempt-1)), then "equal jitter": d/2 + [0, d/2]. */
static long backoff_ms(lf_llm_client_t *client, int attempt) {
  long base = client->opts.backoff_base_ms, cap = client->opts.backoff_max_ms;
  long d = base;
  for (int i = 1; i < attempt && d < cap; ++i)
    d = d > cap / 2 ? cap : d * 2;
  if (d > cap)
    d = cap;
  long half = d / 2;
  uint64_t span = (uint64_t)(d - half) + 1;
  return half + (long)(next_random(&client->rng) % span);
}

static const char *tag_of(const lf_llm_request_t *request) {
  return request->tag ? request->tag : "";
}

/* Copies server-provided text for use in a message: control characters
 * become spaces, the API key and anything shaped like a key ("sk-...",
 * "Bearer ...") become [REDACTED], and the result is cut at `max` bytes.
 * Returns a heap string (free()), or NULL when out of memory. */
static char *scrub_server_text(const lf_llm_client_t *client, const char *text,
                               size_t len, size_t max) {
  const char *key = client->api_key;
  size_t key_len = key ? strlen(key) : 0;
  lf_strbuf_t out;
  lf_strbuf_init(&out, max + sizeof(REDACTED) + 8);
  lf_status_t s = LF_OK;
  size_t i = 0;
  while (i < len && !s && lf_strbuf_len(&out) < max) {
    const char *p = text + i;
    size_t rest = len - i;
    if (key_len && rest >= key_len && memcmp(p, key, key_len) == 0) {
      s = lf_strbuf_append_str(&out, REDACTED);
      i += key_len;
      continue;
    }
    size_t prefix = 0;
    if (rest >= 3 && memcmp(p, "sk-", 3) == 0)
      prefix = 3;
    else if (rest >= 7 && strncasecmp(p, "Bearer ", 7) == 0)
      prefix = 7;
    if (prefix && (i == 0 || !(isalnum((unsigned char)p[-1])))) {
      size_t run = prefix;
      while (run < rest &&
             (isalnum((unsigned char)p[run]) || strchr("_-*.+/=", p[run])))
        ++run;
      if (run - prefix >= 4) {
        s = lf_strbuf_append(&out, p, prefix);
        if (!s)
          s = lf_strbuf_append_str(&out, REDACTED);
        i += run;
        continue;
      }
    }
    char ch = (unsigned char)*p < 0x20 || *p == 0x7f ? ' ' : *p;
    s = lf_strbuf_append(&out, &ch, 1);
    ++i;
  }
  if (!s && i < len)
    s = lf_strbuf_append_str(&out, "...");
  lf_status_free(s);
  return lf_strbuf_take(&out);
}

/* ---- Base URL --------------------------------------------------------- */

static bool host_is_loopback(const char *host) {
  if (strcasecmp(host, "localhost") == 0)
    return true;
  char bare[64];
  size_t n = strlen(host);
  if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof(bare)) {
    memcpy(bare, host + 1, n - 2);
    bare[n - 2] = '\0';
    struct in6_addr a6;
    if (inet_pton(AF_INET6, bare, &a6) != 1)
      return false;
    if (IN6_IS_ADDR_LOOPBACK(&a6))
      return true;
    return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
  }
  struct in_addr a4;
  if (inet_pton(AF_INET, host, &a4) != 1)
    return false;
  return (ntohl(a4.s_addr) >> 24) == 127;
}

/* Checks the base URL and derives the endpoint. Nothing is resolved or
 * connected. The URL is echoed in messages only once it is known to carry
 * no credentials. */
static lf_status_t parse_base_url(lf_llm_client_t *client, const char *base) {
  if (!base || !*base)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "base URL is empty");
  size_t len = strlen(base);
  if (len > BASE_URL_MAX)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "base URL is longer than %d bytes", BASE_URL_MAX);
  lf_status_t status = LF_OK;
  char *scheme = NULL, *host = NULL, *user = NULL, *password = NULL;
  char *query = NULL, *fragment = NULL;
  CURLU *url = curl_url();
  if (!url)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  CURLUcode uc = curl_url_set(url, CURLUPART_URL, base, 0);
  if (uc) {
    status = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "base URL is not a valid absolute URL (%s)",
                       curl_url_strerror(uc));
    goto out_free_url;
  }
  if (curl_url_get(url, CURLUPART_SCHEME, &scheme, 0) ||
      curl_url_get(url, CURLUPART_HOST, &host, 0)) {
    status = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "base URL needs a scheme and a host");
    goto out_free_parts;
  }
  curl_url_get(url, CURLUPART_USER, &user, 0);
  curl_url_get(url, CURLUPART_PASSWORD, &password, 0);
  curl_url_get(url, CURLUPART_QUERY, &query, 0);
  curl_url_get(url, CURLUPART_FRAGMENT, &fragment, 0);
  if (user || password) {
    status = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "base URL must not contain credentials; the key comes "
                       "from the environment variable named by api_key_env");
    goto out_free_parts;
  }
  if (query || fragment) {
    status = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "base URL '%s' must not have a query or fragment", base);
    goto out_free_parts;
  }
  if (strcmp(scheme, "https") == 0) {
    client->https = true;
  } else if (strcmp(scheme, "http") != 0) {
    status =
        LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                  "base URL '%s' must use https (or http to loopback)", base);
    goto out_free_parts;
  }
  client->loopback = host_is_loopback(host);
  if (!client->https && !client->loopback &&
      !client->opts.allow_insecure_http) {
    status = LF_STATUS(LF_STATUS_FAILED_PRECONDITION,
                       "plain http to '%s' is refused: use https, or a "
                       "loopback address (127.0.0.0/8, ::1, localhost), or "
                       "set the insecure-http option",
                       host);
    goto out_free_parts;
  }
  while (len > 0 && base[len - 1] == '/')
    --len;
  lf_strbuf_t endpoint;
  lf_strbuf_init(&endpoint, BASE_URL_MAX + 64);
  status = lf_strbuf_append(&endpoint, base, len);
  if (!status)
    status = lf_strbuf_append_str(&endpoint, "/chat/completions");
  if (status) {
    lf_strbuf_free(&endpoint);
    goto out_free_parts;
  }
  client->endpoint = lf_strbuf_take(&endpoint);
  if (!client->endpoint)
    status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");

out_free_parts:
  curl_free(fragment);
  curl_free(query);
  curl_free(password);
  curl_free(user);
  curl_free(host);
  curl_free(scheme);
out_free_url:
  curl_url_cleanup(url);
  return status;
}

/* ---- Options and client lifetime ---------------------------------------*/

void lf_llm_client_options_init(lf_llm_client_options_t *o) {
  if (!o)
    return;
  memset(o, 0, sizeof(*o));
  o->api_key_env = "OPENAI_API_KEY";
  o->temperature = 0.2;
  o->max_tokens = 0;
  o->stream = true;
  o->connect_timeout_ms = 10000;
  o->total_timeout_ms = 1200000;
  o->stream_idle_timeout_ms = 300000;
  o->low_speed_limit_bps = 0;
  o->low_speed_time_s = 0;
  o->max_response_bytes = 8u << 20;
  o->max_redirects = 3;
  o->max_attempts = 5;
  o->backoff_base_ms = 1000;
  o->backoff_max_ms = 30000;
  o->retry_after_max_ms = 60000;
  o->max_concurrency = 8;
}

static lf_status_t validate_options(const lf_llm_client_options_t *o) {
#define LF_CHECK_OPT_(cond, ...)                                               \
  if (!(cond))                                                                 \
  return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, __VA_ARGS__)
  LF_CHECK_OPT_(!isnan(o->temperature) && o->temperature <= 2.0,
                "temperature must be at most 2 (negative: not sent)");
  LF_CHECK_OPT_(o->max_tokens >= 0, "max_tokens must be >= 0 (0: not sent)");
  LF_CHECK_OPT_(o->connect_timeout_ms > 0, "connect timeout must be > 0");
  LF_CHECK_OPT_(o->total_timeout_ms > 0, "total timeout must be > 0");
  LF_CHECK_OPT_(o->stream_idle_timeout_ms >= 0,
                "stream idle timeout must be >= 0 (0: off)");
  LF_CHECK_OPT_(o->low_speed_limit_bps >= 0 && o->low_speed_time_s >= 0,
                "low-speed limit and time must be >= 0 (0: off)");
  LF_CHECK_OPT_(o->max_response_bytes > 0, "response cap must be > 0");
  LF_CHECK_OPT_(o->max_redirects >= 0 && o->max_redirects <= 20,
                "max redirects must be in [0, 20]");
  LF_CHECK_OPT_(o->max_attempts >= 1 && o->max_attempts <= 100,
                "max attempts must be in [1, 100]");
  LF_CHECK_OPT_(o->backoff_base_ms >= 0 &&
                    o->backoff_max_ms >= o->backoff_base_ms,
                "backoff base must be >= 0 and at most the backoff cap");
  LF_CHECK_OPT_(o->retry_after_max_ms >= 0, "retry-after cap must be >= 0");
  LF_CHECK_OPT_(o->max_concurrency >= 1 && o->max_concurrency <= 1024,
                "max concurrency must be in [1, 1024]");
#undef LF_CHECK_OPT_
  return LF_OK;
}

static bool valid_env_name(const char *name) {
  if (!name || !*name || (!isalpha((unsigned char)*name) && *name != '_'))
    return false;
  for (const char *p = name; *p; ++p)
    if (!isalnum((unsigned char)*p) && *p != '_')
      return false;
  return true;
}

/* Reads the key and builds the fixed request headers. */
static lf_status_t load_key_and_headers(lf_llm_client_t *client) {
  const char *key = getenv(client->api_key_env);
  if (key && *key) {
    for (const char *p = key; *p; ++p)
      if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == ' ')
        return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                         "the API key in $%s contains whitespace or control "
                         "characters",
                         client->api_key_env);
    client->api_key = strdup(key);
    if (!client->api_key)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  } else if (!client->loopback) {
    return LF_STATUS(LF_STATUS_FAILED_PRECONDITION,
                     "no API key: the environment variable %s is unset or "
                     "empty, and %s is not a loopback endpoint",
                     client->api_key_env, client->endpoint);
  }
  const char *const fixed[] = {
      "Content-Type: application/json",
      client->opts.stream ? "Accept: text/event-stream, application/json"
                          : "Accept: application/json",
      "Expect:"};
  for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); ++i) {
    struct curl_slist *next = curl_slist_append(client->headers, fixed[i]);
    if (!next)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    client->headers = next;
  }
  if (!client->api_key)
    return LF_OK;
  lf_strbuf_t line;
  lf_strbuf_init(&line, strlen(client->api_key) + 64);
  lf_status_t status =
      lf_strbuf_appendf(&line, "Authorization: Bearer %s", client->api_key);
  struct curl_slist *next =
      status ? NULL : curl_slist_append(client->headers, lf_strbuf_cstr(&line));
  if (line.data)
    explicit_bzero(line.data, line.alloc);
  lf_strbuf_free(&line);
  if (status)
    return status;
  if (!next)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  client->headers = next;
  return LF_OK;
}

lf_status_t lf_llm_client_create(const lf_llm_client_options_t *options,
                                 lf_llm_client_t **out_client) {
  if (!out_client)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "out_client is NULL");
  *out_client = NULL;
  if (!options)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "options are NULL");
  LF_RETURN_IF_ERROR(validate_options(options));
  const char *env =
      options->api_key_env ? options->api_key_env : "OPENAI_API_KEY";
  if (!valid_env_name(env))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "api_key_env '%s' is not an environment variable name",
                     env);
  pthread_once(&curl_once, curl_init_once);
  if (curl_init_result != CURLE_OK)
    return LF_STATUS(LF_STATUS_INTERNAL, "curl_global_init: %s",
                     curl_easy_strerror(curl_init_result));

  lf_llm_client_t *client = calloc(1, sizeof(*client));
  if (!client)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  client->opts = *options;
  client->opts.base_url = NULL;
  client->opts.model = NULL;
  client->opts.api_key_env = NULL;
  lf_status_t status = parse_base_url(client, options->base_url);
  if (status)
    goto out_destroy_client;
  client->api_key_env = strdup(env);
  if (options->model && *options->model)
    client->model = strdup(options->model);
  if (!client->api_key_env ||
      (options->model && *options->model && !client->model)) {
    status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out_destroy_client;
  }
  status = load_key_and_headers(client);
  if (status)
    goto out_destroy_client;
  client->multi = curl_multi_init();
  if (!client->multi) {
    status = LF_STATUS(LF_STATUS_INTERNAL, "curl_multi_init failed");
    goto out_destroy_client;
  }
  client->rng = options->jitter_seed
                    ? options->jitter_seed
                    : (uint64_t)now_ms() ^ ((uint64_t)getpid() << 32) ^
                          (uint64_t)(uintptr_t)client;
  *out_client = client;
  return LF_OK;

out_destroy_client:
  lf_llm_client_destroy(client);
  return status;
}

void lf_llm_client_destroy(lf_llm_client_t *client) {
  if (!client)
    return;
  if (client->multi)
    curl_multi_cleanup(client->multi);
  for (struct curl_slist *h = client->headers; h; h = h->next)
    explicit_bzero(h->data, strlen(h->data));
  curl_slist_free_all(client->headers);
  wipe_free(client->api_key);
  free(client->api_key_env);
  free(client->model);
  free(client->endpoint);
  free(client);
}

const char *lf_llm_client_endpoint(const lf_llm_client_t *client) {
  return client && client->endpoint ? client->endpoint : "";
}

void lf_llm_result_clear(lf_llm_result_t *result) {
  if (!result)
    return;
  lf_status_free(result->status);
  free(result->content);
  free(result->finish_reason);
  memset(result, 0, sizeof(*result));
}

/* ---- Jobs ----------------------------------------------------------------*/

typedef enum job_state_e {
  JOB_QUEUED,  /* not started */
  JOB_RUNNING, /* attached to the multi handle */
  JOB_WAITING, /* between attempts, until ready_at_ms */
  JOB_DONE,
} job_state_t;

typedef struct job_s {
  lf_llm_client_t *client;
  size_t index;
  const lf_llm_request_t *request;
  lf_llm_result_t *result;
  job_state_t state;
  CURL *easy;
  char *payload;
  size_t payload_len;
  lf_strbuf_t body;
  lf_llm_response_headers_t hdr; /* what the response headers said */
  bool in_headers;               /* between an "HTTP/" line and its blank */
  lf_llm_sse_parser_t *sse;      /* set when the reply is an event stream */
  lf_status_t sse_error;         /* why the parser stopped the transfer */
  bool sse_retryable;
  bool idle_expired;    /* the stream sent nothing for the idle timeout */
  int64_t last_byte_ms; /* of the stream: its headers, then each byte */
  int64_t first_start_ms, attempt_start_ms, ready_at_ms;
  char errbuf[CURL_ERROR_SIZE];
} job_t;

/* ---- The one place for cJSON failures ------------------------------------*/

/* Parses a response body. DATA_LOSS, with where parsing stopped and a
 * scrubbed excerpt, when it is not JSON. */
static lf_status_t json_parse_body(const lf_llm_client_t *client,
                                   const char *text, size_t len,
                                   cJSON **out_root) {
  const char *end = NULL;
  *out_root = cJSON_ParseWithLengthOpts(text, len, &end, false);
  if (*out_root)
    return LF_OK;
  size_t at =
      end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
  char *excerpt = scrub_server_text(client, text, len, 80);
  lf_status_t status = LF_STATUS(
      LF_STATUS_DATA_LOSS,
      "response is not valid JSON (parse error at byte %zu of %zu): \"%s\"", at,
      len, excerpt ? excerpt : "");
  free(excerpt);
  return status;
}

/* A response that parsed but lacks what it must have. */
static lf_status_t json_shape_error(const char *what, const char *detail) {
  return LF_STATUS(LF_STATUS_DATA_LOSS, "response JSON has no %s%s", what,
                   detail ? detail : "");
}

/* Request JSON could not be built: cJSON only fails on allocation. */
static lf_status_t json_build_error(void) {
  return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED,
                   "out of memory building the request JSON");
}

static const cJSON *json_member(const cJSON *object, const char *name) {
  return cJSON_IsObject(object) ? cJSON_GetObjectItemCaseSensitive(object, name)
                                : NULL;
}

/* Reads usage.prompt_tokens and usage.completion_tokens when both are
 * numbers, clamped to [0, LONG_MAX] (a hostile 1e70 must not overflow). */
static void json_usage(const cJSON *usage, lf_llm_usage_t *out) {
  const cJSON *prompt = json_member(usage, "prompt_tokens");
  const cJSON *completion = json_member(usage, "completion_tokens");
  if (!cJSON_IsNumber(prompt) || !cJSON_IsNumber(completion))
    return;
  const cJSON *items[2] = {prompt, completion};
  long *counts[2] = {&out->prompt_tokens, &out->completion_tokens};
  for (int i = 0; i < 2; ++i) {
    double v = items[i]->valuedouble;
    *counts[i] = !(v > 0)                ? 0 /* NaN too */
                 : v >= (double)LONG_MAX ? LONG_MAX
                                         : (long)v;
  }
  out->present = true;
}

/* ---- Request and response bodies -----------------------------------------*/

static lf_status_t build_payload(const lf_llm_client_t *client, job_t *job) {
  const lf_llm_request_t *r = job->request;
  const char *model = r->model && *r->model ? r->model : client->model;
  if (!model)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "request %zu names no model and the client has none",
                     job->index);
  if (!r->messages || r->message_count == 0)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "request %zu has no messages",
                     job->index);
  for (size_t i = 0; i < r->message_count; ++i)
    if (!r->messages[i].role || !*r->messages[i].role ||
        !r->messages[i].content)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "request %zu: message %zu lacks a role or content",
                       job->index, i);
  lf_status_t status = LF_OK;
  cJSON *root = cJSON_CreateObject();
  cJSON *messages = NULL;
  if (!root || !cJSON_AddStringToObject(root, "model", model) ||
      !(messages = cJSON_AddArrayToObject(root, "messages")))
    goto out_oom;
  for (size_t i = 0; i < r->message_count; ++i) {
    cJSON *m = cJSON_CreateObject();
    if (!m)
      goto out_oom;
    cJSON_AddItemToArray(messages, m);
    if (!cJSON_AddStringToObject(m, "role", r->messages[i].role) ||
        !cJSON_AddStringToObject(m, "content", r->messages[i].content))
      goto out_oom;
  }
  if (client->opts.temperature >= 0 &&
      !cJSON_AddNumberToObject(root, "temperature", client->opts.temperature))
    goto out_oom;
  if (client->opts.max_tokens > 0 &&
      !cJSON_AddNumberToObject(root, "max_tokens", client->opts.max_tokens))
    goto out_oom;
  if (client->opts.stream) {
    cJSON *stream_options = NULL;
    if (!cJSON_AddTrueToObject(root, "stream") ||
        !(stream_options = cJSON_AddObjectToObject(root, "stream_options")) ||
        !cJSON_AddTrueToObject(stream_options, "include_usage"))
      goto out_oom;
  }
  job->payload = cJSON_PrintUnformatted(root);
  if (!job->payload)
    goto out_oom;
  job->payload_len = strlen(job->payload);
  goto out_delete_root;

out_oom:
  status = json_build_error();
out_delete_root:
  cJSON_Delete(root);
  return status;
}

/* Fills the result from a 2xx body. */
static lf_status_t parse_completion(const lf_llm_client_t *client,
                                    const char *body, size_t len,
                                    lf_llm_result_t *result) {
  cJSON *root = NULL;
  LF_RETURN_IF_ERROR(json_parse_body(client, body, len, &root));
  lf_status_t status = LF_OK;
  const cJSON *choices = json_member(root, "choices");
  const cJSON *choice =
      cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
  const cJSON *message = json_member(choice, "message");
  const cJSON *content = json_member(message, "content");
  const cJSON *finish = json_member(choice, "finish_reason");
  if (cJSON_IsString(finish) && finish->valuestring) {
    result->finish_reason = strdup(finish->valuestring);
    if (!result->finish_reason) {
      status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
      goto out_delete_root;
    }
  }
  if (!cJSON_IsString(content) || !content->valuestring) {
    char detail[96] = "";
    if (result->finish_reason) {
      char *reason = scrub_server_text(client, result->finish_reason,
                                       strlen(result->finish_reason), 40);
      snprintf(detail, sizeof(detail), " (finish_reason: %s)",
               reason ? reason : "?");
      free(reason);
    }
    status = json_shape_error(!cJSON_IsObject(choice)
                                  ? "choices[0]"
                                  : "choices[0].message.content string",
                              detail);
    goto out_delete_root;
  }
  result->content = strdup(content->valuestring);
  if (!result->content) {
    status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out_delete_root;
  }
  json_usage(json_member(root, "usage"), &result->usage);

out_delete_root:
  cJSON_Delete(root);
  return status;
}

/* What an error body says, in the shapes OpenAI, vLLM, llama.cpp and Ollama
 * use: {"error":{"message","type","code"}}, {"error":"text"},
 * {"message","type","code"}; anything else is quoted as text. All three
 * strings are scrubbed heap copies (or NULL). */
typedef struct server_error_s {
  char *message;
  char *type;
  char *code;
} server_error_t;

static char *scrub_json_text(const lf_llm_client_t *client, const cJSON *item,
                             size_t max) {
  char number[32];
  const char *text = NULL;
  if (cJSON_IsString(item) && item->valuestring)
    text = item->valuestring;
  else if (cJSON_IsNumber(item)) {
    snprintf(number, sizeof(number), "%.0f", item->valuedouble);
    text = number;
  }
  return text && *text ? scrub_server_text(client, text, strlen(text), max)
                       : NULL;
}

static void parse_error_body(const lf_llm_client_t *client, const char *body,
                             size_t len, server_error_t *out) {
  memset(out, 0, sizeof(*out));
  if (len == 0)
    return;
  cJSON *root = cJSON_ParseWithLength(body, len);
  if (!root) {
    out->message = scrub_server_text(client, body, len, SERVER_TEXT_MAX);
    return;
  }
  const cJSON *error = json_member(root, "error");
  const cJSON *holder = cJSON_IsObject(error) ? error : root;
  if (cJSON_IsString(error))
    out->message = scrub_json_text(client, error, SERVER_TEXT_MAX);
  else
    out->message = scrub_json_text(client, json_member(holder, "message"),
                                   SERVER_TEXT_MAX);
  out->type = scrub_json_text(client, json_member(holder, "type"), 64);
  out->code = scrub_json_text(client, json_member(holder, "code"), 64);
  cJSON_Delete(root);
}

static void server_error_free(server_error_t *e) {
  free(e->message);
  free(e->type);
  free(e->code);
}

/* ---- The one place for HTTP codes ----------------------------------------*/

static lf_status_t http_error_status(const lf_llm_client_t *client,
                                     const char *body, size_t len, long http,
                                     bool *retryable) {
  server_error_t err;
  parse_error_body(client, body, len, &err);
  bool no_quota = (err.code && strcmp(err.code, "insufficient_quota") == 0) ||
                  (err.type && strcmp(err.type, "insufficient_quota") == 0);
  lf_status_code_t code;
  *retryable = false;
  if (http == 400 || http == 422)
    code = LF_STATUS_INVALID_ARGUMENT;
  else if (http == 401 || http == 403)
    code = LF_STATUS_PERMISSION_DENIED;
  else if (http == 404)
    code = LF_STATUS_NOT_FOUND;
  else if (http == 408)
    code = LF_STATUS_DEADLINE_EXCEEDED, *retryable = true;
  else if (http == 409)
    code = LF_STATUS_ABORTED, *retryable = true;
  else if (http == 413)
    code = LF_STATUS_RESOURCE_EXHAUSTED;
  else if (http == 429)
    code = LF_STATUS_RESOURCE_EXHAUSTED, *retryable = !no_quota;
  else if (http >= 500 && http <= 599)
    code = LF_STATUS_UNAVAILABLE, *retryable = true;
  else if (http >= 300 && http <= 399)
    code = LF_STATUS_FAILED_PRECONDITION; /* a redirect we did not follow */
  else if (http >= 400 && http <= 499)
    code = LF_STATUS_FAILED_PRECONDITION;
  else
    code = LF_STATUS_UNKNOWN;
  const char *label = err.code ? err.code : err.type;
  lf_status_t status =
      LF_STATUS(code, "POST %s: HTTP %ld%s%s%s%s%s%s", client->endpoint, http,
                label ? " [" : "", label ? label : "", label ? "]" : "",
                err.message ? ": " : "", err.message ? err.message : "",
                no_quota ? " (quota exhausted: not retried)" : "");
  server_error_free(&err);
  return status;
}

/* ---- The one place for CURLcodes -----------------------------------------*/

static lf_status_t curl_code_status(const lf_llm_client_t *client, CURLcode rc,
                                    const char *detail, bool *retryable) {
  lf_status_code_t code;
  const char *hint = "";
  *retryable = false;
  switch (rc) {
  case CURLE_OPERATION_TIMEDOUT:
    code = LF_STATUS_DEADLINE_EXCEEDED, *retryable = true;
    break;
  case CURLE_GOT_NOTHING:
  case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR:
  case CURLE_PARTIAL_FILE:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
    code = LF_STATUS_UNAVAILABLE, *retryable = true;
    hint = " (connection dropped)";
    break;
  case CURLE_COULDNT_CONNECT:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY:
    code = LF_STATUS_UNAVAILABLE;
    break;
  case CURLE_UNSUPPORTED_PROTOCOL:
    code = LF_STATUS_PERMISSION_DENIED;
    hint = " (redirects are followed to https URLs only)";
    break;
  case CURLE_TOO_MANY_REDIRECTS:
    code = LF_STATUS_FAILED_PRECONDITION;
    break;
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_CERTPROBLEM:
    code = LF_STATUS_FAILED_PRECONDITION;
    hint = " (TLS verification is always on)";
    break;
  case CURLE_OUT_OF_MEMORY:
    code = LF_STATUS_RESOURCE_EXHAUSTED;
    break;
  default:
    code = LF_STATUS_UNKNOWN;
    break;
  }
  return LF_STATUS(code, "POST %s: %s%s (curl error %d%s%s)", client->endpoint,
                   curl_easy_strerror(rc), hint, (int)rc,
                   detail && *detail ? ": " : "", detail ? detail : "");
}

/* ---- Event streams -------------------------------------------------------*/

/* A streamed reply is a text/event-stream: lines that end in CRLF, LF or
 * CR, grouped into events by blank lines. Only "data" fields matter here;
 * ":" lines are keep-alive comments. Each event's data is one JSON chunk of
 * the completion, or "[DONE]". Bytes arrive in arbitrary pieces, so a line
 * cut by a piece boundary is carried over in `line`. */
struct lf_llm_sse_parser_s {
  const lf_llm_client_t *client;
  size_t cap;          /* max_response_bytes */
  lf_strbuf_t line;    /* the unterminated line carried between feeds */
  lf_strbuf_t data;    /* the event's data lines, each ending in '\n' */
  lf_strbuf_t content; /* choices[0].delta.content so far */
  char *finish_reason;
  lf_llm_usage_t usage;
  size_t events;    /* events with data seen, [DONE] included */
  bool got_content; /* some chunk had a delta.content string */
  bool in_comment;  /* the carried line is a comment: dropped, not kept */
  bool after_cr;    /* the last line ended in CR: a next LF belongs to it */
  bool done;        /* [DONE] seen: the rest is ignored */
  bool finished;
  lf_status_t error; /* the first failure, returned again on every call */
  bool error_retryable;
};

lf_status_t lf_llm_sse_parser_create(const lf_llm_client_t *client,
                                     lf_llm_sse_parser_t **out_parser) {
  if (!out_parser)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "out_parser is NULL");
  *out_parser = NULL;
  if (!client)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "the parser needs a client");
  lf_llm_sse_parser_t *p = calloc(1, sizeof(*p));
  if (!p)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  p->client = client;
  p->cap = client->opts.max_response_bytes;
  lf_strbuf_init(&p->line, p->cap);
  lf_strbuf_init(&p->data, p->cap);
  lf_strbuf_init(&p->content, p->cap);
  *out_parser = p;
  return LF_OK;
}

void lf_llm_sse_parser_destroy(lf_llm_sse_parser_t *p) {
  if (!p)
    return;
  lf_strbuf_free(&p->line);
  lf_strbuf_free(&p->data);
  lf_strbuf_free(&p->content);
  free(p->finish_reason);
  lf_status_free(p->error);
  free(p);
}

bool lf_llm_sse_parser_done(const lf_llm_sse_parser_t *p) {
  return p && p->done;
}

/* A copy of the sticky error, for the caller to own. */
static lf_status_t sse_error_copy(const lf_llm_sse_parser_t *p,
                                  bool *out_retryable) {
  if (out_retryable)
    *out_retryable = p->error_retryable;
  return LF_STATUS(lf_status_code(p->error), "%s", lf_status_message(p->error));
}

static lf_status_t sse_over_cap(const lf_llm_sse_parser_t *p,
                                const char *what) {
  return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED,
                   "POST %s: %s exceeds the cap of %zu bytes (transfer "
                   "aborted)",
                   p->client->endpoint, what, p->cap);
}

/* An "error" chunk: the server gave up mid-stream, as with a 5xx. */
static lf_status_t sse_error_event(const lf_llm_sse_parser_t *p,
                                   const char *text, size_t len) {
  server_error_t err;
  parse_error_body(p->client, text, len, &err);
  const char *label = err.code ? err.code : err.type;
  lf_status_t status = LF_STATUS(
      LF_STATUS_UNAVAILABLE,
      "POST %s: the stream carried an error event%s%s%s%s%s (after %zu bytes "
      "of content)",
      p->client->endpoint, label ? " [" : "", label ? label : "",
      label ? "]" : "", err.message ? ": " : "", err.message ? err.message : "",
      lf_strbuf_len(&p->content));
  server_error_free(&err);
  return status;
}

/* Reads one JSON chunk into the parser's state. */
static lf_status_t sse_chunk(lf_llm_sse_parser_t *p, const char *text,
                             size_t len, bool *retryable) {
  cJSON *root = cJSON_ParseWithLength(text, len);
  if (!root) {
    char *excerpt = scrub_server_text(p->client, text, len, 80);
    lf_status_t status =
        LF_STATUS(LF_STATUS_DATA_LOSS,
                  "POST %s: event %zu of the stream is not valid JSON: \"%s\"",
                  p->client->endpoint, p->events, excerpt ? excerpt : "");
    free(excerpt);
    return status;
  }
  lf_status_t status = LF_OK;
  const cJSON *error = json_member(root, "error");
  if (cJSON_IsObject(error) || cJSON_IsString(error)) {
    *retryable = true;
    status = sse_error_event(p, text, len);
    goto out_delete_root;
  }
  const cJSON *choices = json_member(root, "choices");
  const cJSON *choice =
      cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
  const cJSON *content = json_member(json_member(choice, "delta"), "content");
  if (cJSON_IsString(content) && content->valuestring) {
    size_t n = strlen(content->valuestring);
    if (n > p->cap - lf_strbuf_len(&p->content)) {
      status = sse_over_cap(p, "the streamed content");
      goto out_delete_root;
    }
    status = lf_strbuf_append(&p->content, content->valuestring, n);
    if (status)
      goto out_delete_root;
    p->got_content = true;
  }
  const cJSON *finish = json_member(choice, "finish_reason");
  if (cJSON_IsString(finish) && finish->valuestring) {
    char *copy = strdup(finish->valuestring);
    if (!copy) {
      status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
      goto out_delete_root;
    }
    free(p->finish_reason);
    p->finish_reason = copy;
  }
  json_usage(json_member(root, "usage"), &p->usage);

out_delete_root:
  cJSON_Delete(root);
  return status;
}

/* True when the event data `text` is the end marker. */
static bool sse_is_done(const char *text, size_t len) {
  while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
    --len;
  return len == 6 && memcmp(text, "[DONE]", 6) == 0;
}

/* A blank line: the event collected so far is complete. */
static lf_status_t sse_dispatch(lf_llm_sse_parser_t *p, bool *retryable) {
  size_t n = lf_strbuf_len(&p->data);
  if (n == 0)
    return LF_OK;                    /* no data field: nothing to dispatch */
  lf_strbuf_truncate(&p->data, --n); /* the last data line's '\n' */
  const char *text = lf_strbuf_cstr(&p->data);
  lf_status_t status = LF_OK;
  ++p->events;
  if (sse_is_done(text, n))
    p->done = true;
  else if (n > 0) /* "data:" alone: an empty event, ignored */
    status = sse_chunk(p, text, n, retryable);
  lf_strbuf_reset(&p->data);
  return status;
}

/* One complete line, without its line end. */
static lf_status_t sse_line(lf_llm_sse_parser_t *p, const char *s, size_t n,
                            bool *retryable) {
  if (n == 0)
    return sse_dispatch(p, retryable);
  if (s[0] == ':')
    return LF_OK; /* a comment: a keep-alive */
  const char *colon = memchr(s, ':', n);
  size_t name_len = colon ? (size_t)(colon - s) : n;
  if (name_len != 4 || memcmp(s, "data", 4) != 0)
    return LF_OK; /* event, id, retry and unknown fields */
  const char *value = colon ? colon + 1 : s + n;
  size_t value_len = (size_t)(s + n - value);
  if (value_len > 0 && *value == ' ')
    ++value, --value_len;
  if (value_len >= p->cap - lf_strbuf_len(&p->data))
    return sse_over_cap(p, "one event of the stream");
  lf_status_t status = lf_strbuf_append(&p->data, value, value_len);
  return status ? status : lf_strbuf_append(&p->data, "\n", 1);
}

/* Keeps the start of a line cut by the end of a piece. */
static lf_status_t sse_carry(lf_llm_sse_parser_t *p, const char *s, size_t n) {
  if (n == 0 || p->in_comment)
    return LF_OK;
  if (lf_strbuf_len(&p->line) == 0 && s[0] == ':') {
    p->in_comment = true; /* its bytes need not be kept */
    return LF_OK;
  }
  size_t used = lf_strbuf_len(&p->line) + lf_strbuf_len(&p->data);
  if (used > p->cap || n > p->cap - used)
    return sse_over_cap(p, "one event of the stream");
  return lf_strbuf_append(&p->line, s, n);
}

lf_status_t lf_llm_sse_parser_feed(lf_llm_sse_parser_t *p, const char *data,
                                   size_t len, bool *out_retryable) {
  if (out_retryable)
    *out_retryable = false;
  if (!p || (len > 0 && !data))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "sse_parser_feed needs a parser and data");
  if (p->error)
    return sse_error_copy(p, out_retryable);
  if (p->finished)
    return LF_STATUS(LF_STATUS_FAILED_PRECONDITION,
                     "the event-stream parser has already finished");
  lf_status_t status = LF_OK;
  bool retryable = false;
  size_t i = 0;
  while (i < len && !p->done) {
    if (p->after_cr) {
      p->after_cr = false;
      if (data[i] == '\n') { /* the LF of a CRLF cut between pieces */
        ++i;
        continue;
      }
    }
    size_t end = i;
    while (end < len && data[end] != '\n' && data[end] != '\r')
      ++end;
    if (end == len) {
      status = sse_carry(p, data + i, end - i);
      break;
    }
    if (lf_strbuf_len(&p->line) == 0 && !p->in_comment) {
      /* Whole in this piece: the same cap as for a line carried over. */
      size_t n = end - i;
      if (n > 0 && data[i] != ':' && n > p->cap - lf_strbuf_len(&p->data))
        status = sse_over_cap(p, "one event of the stream");
      else
        status = sse_line(p, data + i, n, &retryable);
    } else {
      status = sse_carry(p, data + i, end - i);
      if (!status && !p->in_comment)
        status = sse_line(p, lf_strbuf_cstr(&p->line), lf_strbuf_len(&p->line),
                          &retryable);
      lf_strbuf_reset(&p->line);
      p->in_comment = false;
    }
    if (status)
      break;
    p->after_cr = data[end] == '\r';
    i = end + 1;
  }
  if (!status)
    return LF_OK;
  p->error = status;
  p->error_retryable = retryable;
  return sse_error_copy(p, out_retryable);
}

lf_status_t lf_llm_sse_parser_finish(lf_llm_sse_parser_t *p,
                                     lf_llm_result_t *result,
                                     bool *out_retryable) {
  if (out_retryable)
    *out_retryable = false;
  if (!p || !result)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "sse_parser_finish needs a parser and a result");
  if (p->error)
    return sse_error_copy(p, out_retryable);
  if (p->finished)
    return LF_STATUS(LF_STATUS_FAILED_PRECONDITION,
                     "the event-stream parser has already finished");
  p->finished = true;
  if (!p->done && !p->in_comment && lf_strbuf_len(&p->line) > 0) {
    /* The last line lacks its line end: it can still say [DONE]. */
    bool unused = false;
    lf_status_free(sse_line(p, lf_strbuf_cstr(&p->line),
                            lf_strbuf_len(&p->line), &unused));
  }
  size_t pending = lf_strbuf_len(&p->data);
  if (!p->done && pending > 0 &&
      sse_is_done(lf_strbuf_cstr(&p->data), pending - 1))
    p->done = true; /* "data: [DONE]" without the blank line after it */
  if (!p->done && !p->finish_reason) {
    if (out_retryable)
      *out_retryable = true;
    return LF_STATUS(LF_STATUS_UNAVAILABLE,
                     "POST %s: stream ended before [DONE], without a "
                     "finish_reason (%zu events, %zu bytes of content); "
                     "treated as broken",
                     p->client->endpoint, p->events,
                     lf_strbuf_len(&p->content));
  }
  if (!p->got_content) {
    char detail[96] = "";
    if (p->finish_reason) {
      char *reason = scrub_server_text(p->client, p->finish_reason,
                                       strlen(p->finish_reason), 40);
      snprintf(detail, sizeof(detail), " (finish_reason: %s)",
               reason ? reason : "?");
      free(reason);
    }
    return LF_STATUS(LF_STATUS_DATA_LOSS,
                     "POST %s: the stream has no choices[0].delta.content "
                     "string%s",
                     p->client->endpoint, detail);
  }
  char *content = lf_strbuf_take(&p->content);
  if (!content)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  result->content = content;
  result->finish_reason = p->finish_reason;
  p->finish_reason = NULL;
  result->usage = p->usage;
  return LF_OK;
}

/* ---- Transfer callbacks --------------------------------------------------*/

static size_t on_body(char *data, size_t size, size_t nmemb, void *user) {
  job_t *job = user;
  size_t n = size * nmemb;
  if (job->sse) {
    job->last_byte_ms = now_ms();
    bool retryable = false;
    lf_status_t s = lf_llm_sse_parser_feed(job->sse, data, n, &retryable);
    if (!s)
      return n;
    lf_status_free(job->sse_error);
    job->sse_error = s;
    job->sse_retryable = retryable;
    return 0; /* aborts the transfer; attempt_status reports sse_error */
  }
  if (n > job->client->opts.max_response_bytes - lf_strbuf_len(&job->body)) {
    job->hdr.too_large = true;
    return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
  }
  lf_status_t s = lf_strbuf_append(&job->body, data, n);
  if (s) {
    lf_status_free(s);
    return 0;
  }
  return n;
}

/* If the header line `data` is "<name>: value", copies the trimmed value. */
static bool header_value(const char *data, size_t n, const char *name,
                         char *out, size_t out_size) {
  size_t name_len = strlen(name);
  if (n <= name_len || strncasecmp(data, name, name_len) != 0 ||
      data[name_len] != ':')
    return false;
  size_t i = name_len + 1;
  while (i < n && (data[i] == ' ' || data[i] == '\t'))
    ++i;
  size_t end = n;
  while (end > i && (data[end - 1] == '\r' || data[end - 1] == '\n' ||
                     data[end - 1] == ' ' || data[end - 1] == '\t'))
    --end;
  size_t len = end - i < out_size - 1 ? end - i : out_size - 1;
  memcpy(out, data + i, len);
  out[len] = '\0';
  return true;
}

bool lf_llm_parse_response_header(const lf_llm_client_t *client,
                                  const char *data, size_t n,
                                  lf_llm_response_headers_t *hdr) {
  char value[128];
  if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) {
    /* A new response (after a redirect or a 1xx): forget the last one's. */
    hdr->retry_after_ms = -1;
    hdr->retry_after_ms_header = -1;
    hdr->event_stream = false;
  } else if (header_value(data, n, "content-type", value, sizeof(value))) {
    static const char sse_type[] = "text/event-stream";
    size_t k = sizeof(sse_type) - 1;
    hdr->event_stream = strncasecmp(value, sse_type, k) == 0 &&
                        (value[k] == '\0' || value[k] == ';' ||
                         value[k] == ' ' || value[k] == '\t');
  } else if (header_value(data, n, "retry-after-ms", value, sizeof(value))) {
    char *end;
    double ms = strtod(value, &end);
    if (end != value && *end == '\0' && isfinite(ms) && ms >= 0)
      hdr->retry_after_ms_header = ms > 1e9 ? 1000000000L : (long)ceil(ms);
  } else if (header_value(data, n, "retry-after", value, sizeof(value))) {
    char *end;
    long long seconds = strtoll(value, &end, 10);
    if (end != value && *end == '\0' && seconds >= 0) {
      hdr->retry_after_ms =
          seconds > 1000000 ? 1000000000L : (long)seconds * 1000;
    } else {
      time_t when = curl_getdate(value, NULL); /* an HTTP-date */
      if (when != (time_t)-1) {
        double delta = difftime(when, time(NULL));
        hdr->retry_after_ms = delta <= 0    ? 0
                              : delta > 1e6 ? 1000000000L
                                            : (long)delta * 1000;
      }
    }
  } else if (header_value(data, n, "content-length", value, sizeof(value))) {
    char *end;
    unsigned long long declared = strtoull(value, &end, 10);
    if (end != value && *end == '\0' &&
        declared > client->opts.max_response_bytes) {
      hdr->too_large = true;
      return false; /* refuse before the body arrives */
    }
  }
  return true;
}

/* At the blank line that ends a response's headers: a 2xx event stream
 * gets a parser, and its idle clock starts. False stops the transfer. */
static bool begin_body(job_t *job) {
  lf_llm_sse_parser_destroy(job->sse);
  job->sse = NULL;
  long http = 0;
  if (!job->hdr.event_stream ||
      curl_easy_getinfo(job->easy, CURLINFO_RESPONSE_CODE, &http) != CURLE_OK ||
      http < 200 || http > 299)
    return true;
  lf_status_t s = lf_llm_sse_parser_create(job->client, &job->sse);
  if (s) {
    lf_status_free(job->sse_error);
    job->sse_error = s;
    job->sse_retryable = false;
    return false;
  }
  job->last_byte_ms = now_ms();
  return true;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *user) {
  job_t *job = user;
  size_t n = size * nmemb;
  if (!lf_llm_parse_response_header(job->client, data, n, &job->hdr))
    return 0;
  if (n >= 5 && memcmp(data, "HTTP/", 5) == 0)
    job->in_headers = true;
  else if (job->in_headers && (n == 0 || data[0] == '\r' || data[0] == '\n')) {
    job->in_headers = false; /* a blank line after trailers is not this */
    if (!begin_body(job))
      return 0;
  }
  return n;
}

void lf_llm_response_headers_init(lf_llm_response_headers_t *hdr) {
  hdr->retry_after_ms = -1;
  hdr->retry_after_ms_header = -1;
  hdr->too_large = false;
  hdr->event_stream = false;
}

lf_status_t lf_llm_parse_chat_response(const lf_llm_client_t *client,
                                       long http_code, const char *body,
                                       size_t len, lf_llm_result_t *result,
                                       bool *out_retryable) {
  bool retryable = false;
  if (out_retryable)
    *out_retryable = false;
  if (!client || !result || (len > 0 && !body))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "parse_chat_response needs a client, a result and a body");
  memset(result, 0, sizeof(*result));
  result->http_code = http_code;
  if (!body)
    body = "";
  if (http_code >= 200 && http_code <= 299)
    return parse_completion(client, body, len, result);
  lf_status_t status =
      http_error_status(client, body, len, http_code, &retryable);
  if (out_retryable)
    *out_retryable = retryable;
  return status;
}

/* ---- Attempts ------------------------------------------------------------*/

static lf_status_t setup_easy(job_t *job) {
  lf_llm_client_t *client = job->client;
  const lf_llm_client_options_t *o = &client->opts;
  CURL *e = curl_easy_init();
  if (!e)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "curl_easy_init failed");
  CURLcode rc = CURLE_OK;
#define LF_SET_(option, value)                                                 \
  if (rc == CURLE_OK)                                                          \
  rc = curl_easy_setopt(e, option, value)
  LF_SET_(CURLOPT_URL, client->endpoint);
  LF_SET_(CURLOPT_POSTFIELDS, job->payload);
  LF_SET_(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)job->payload_len);
  LF_SET_(CURLOPT_HTTPHEADER, client->headers);
  LF_SET_(CURLOPT_USERAGENT, USER_AGENT);
  LF_SET_(CURLOPT_ACCEPT_ENCODING, ""); /* the cap applies after decoding */
  LF_SET_(CURLOPT_WRITEFUNCTION, on_body);
  LF_SET_(CURLOPT_WRITEDATA, job);
  LF_SET_(CURLOPT_HEADERFUNCTION, on_header);
  LF_SET_(CURLOPT_HEADERDATA, job);
  LF_SET_(CURLOPT_ERRORBUFFER, job->errbuf);
  LF_SET_(CURLOPT_PRIVATE, job);
  LF_SET_(CURLOPT_NOSIGNAL, 1L);
  LF_SET_(CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
  LF_SET_(CURLOPT_TIMEOUT_MS, o->total_timeout_ms);
  LF_SET_(CURLOPT_LOW_SPEED_LIMIT, o->low_speed_limit_bps);
  LF_SET_(CURLOPT_LOW_SPEED_TIME, o->low_speed_time_s);
  LF_SET_(CURLOPT_SSL_VERIFYPEER, 1L);
  LF_SET_(CURLOPT_SSL_VERIFYHOST, 2L);
  LF_SET_(CURLOPT_PROTOCOLS_STR, client->https ? "https" : "http,https");
  LF_SET_(CURLOPT_REDIR_PROTOCOLS_STR, "https");
  LF_SET_(CURLOPT_FOLLOWLOCATION, o->max_redirects > 0 ? 1L : 0L);
  LF_SET_(CURLOPT_MAXREDIRS, (long)o->max_redirects);
  LF_SET_(CURLOPT_POSTREDIR, (long)CURL_REDIR_POST_ALL);
  if (client->loopback)
    LF_SET_(CURLOPT_PROXY, ""); /* never send loopback traffic to a proxy */
#undef LF_SET_
  if (rc != CURLE_OK) {
    bool unused;
    curl_easy_cleanup(e);
    return curl_code_status(client, rc, "while setting options", &unused);
  }
  job->easy = e;
  return LF_OK;
}

static lf_status_t start_attempt(job_t *job, int64_t now) {
  if (!job->easy)
    LF_RETURN_IF_ERROR(setup_easy(job));
  lf_strbuf_reset(&job->body);
  lf_llm_response_headers_init(&job->hdr);
  job->errbuf[0] = '\0';
  /* A retry starts from scratch: what a broken stream sent is dropped. */
  lf_llm_sse_parser_destroy(job->sse);
  job->sse = NULL;
  lf_status_free(job->sse_error);
  job->sse_error = NULL;
  job->sse_retryable = job->idle_expired = job->in_headers = false;
  CURLMcode mc = curl_multi_add_handle(job->client->multi, job->easy);
  if (mc != CURLM_OK)
    return LF_STATUS(LF_STATUS_INTERNAL, "curl_multi_add_handle: %s",
                     curl_multi_strerror(mc));
  if (job->result->attempts == 0)
    job->first_start_ms = now;
  job->attempt_start_ms = now;
  ++job->result->attempts;
  job->state = JOB_RUNNING;
  LF_LOG_DEBUG("llm request %zu '%s': attempt %d: POST %s", job->index,
               tag_of(job->request), job->result->attempts,
               job->client->endpoint);
  return LF_OK;
}

/* Ends a job: the result keeps `status`; the transfer state goes. */
static void finish_job(job_t *job, lf_status_t status, int64_t now) {
  job->result->status = status;
  job->result->elapsed_ms =
      job->result->attempts ? (long)(now - job->first_start_ms) : 0;
  job->state = JOB_DONE;
  if (job->easy)
    curl_easy_cleanup(job->easy);
  job->easy = NULL;
  cJSON_free(job->payload);
  job->payload = NULL;
  lf_strbuf_free(&job->body);
  lf_llm_sse_parser_destroy(job->sse);
  job->sse = NULL;
  lf_status_free(job->sse_error);
  job->sse_error = NULL;
}

/* Classifies a transfer whose reply was an event stream. A stream is
 * complete with [DONE] or a finish_reason, however its transfer ended;
 * otherwise what broke it is reported (the parser's error, the idle
 * timeout, the transport's error, or the early end), retryable. */
static lf_status_t stream_status(job_t *job, CURLcode rc, bool *retryable) {
  const lf_llm_client_t *client = job->client;
  if (job->sse_error) {
    lf_status_t status = job->sse_error;
    job->sse_error = NULL;
    *retryable = job->sse_retryable;
    return status;
  }
  lf_status_t transport = LF_OK;
  bool transport_retryable = false;
  if (job->idle_expired) {
    transport =
        LF_STATUS(LF_STATUS_DEADLINE_EXCEEDED,
                  "POST %s: the stream sent no byte for %ld ms (the "
                  "stream idle timeout); treated as broken",
                  client->endpoint, client->opts.stream_idle_timeout_ms);
    transport_retryable = true;
  } else if (rc != CURLE_OK) {
    transport = curl_code_status(client, rc, job->errbuf, &transport_retryable);
  }
  if (transport && !transport_retryable)
    return transport;
  lf_status_t status =
      lf_llm_sse_parser_finish(job->sse, job->result, retryable);
  if (!status || !transport || !*retryable) {
    lf_status_free(transport);
    return status;
  }
  lf_status_free(status); /* "ended before [DONE]": the transport says why */
  return transport;
}

/* Classifies a finished transfer. */
static lf_status_t attempt_status(job_t *job, CURLcode rc, long http,
                                  bool *retryable) {
  *retryable = false;
  if (job->sse)
    return stream_status(job, rc, retryable);
  if (job->sse_error) { /* no parser could be made for the stream */
    lf_status_t status = job->sse_error;
    job->sse_error = NULL;
    return status;
  }
  if (rc != CURLE_OK) {
    if (job->hdr.too_large)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED,
                       "POST %s: response exceeds the cap of %zu bytes "
                       "(transfer aborted)",
                       job->client->endpoint,
                       job->client->opts.max_response_bytes);
    return curl_code_status(job->client, rc, job->errbuf, retryable);
  }
  if (http >= 200 && http <= 299)
    return parse_completion(job->client, lf_strbuf_cstr(&job->body),
                            lf_strbuf_len(&job->body), job->result);
  return http_error_status(job->client, lf_strbuf_cstr(&job->body),
                           lf_strbuf_len(&job->body), http, retryable);
}

static void report_attempt(job_t *job, lf_llm_attempt_outcome_t outcome,
                           lf_status_t status, long wait_ms, int64_t now) {
  const lf_llm_client_options_t *o = &job->client->opts;
  lf_llm_attempt_t a = {
      .request_index = job->index,
      .tag = tag_of(job->request),
      .attempt = job->result->attempts,
      .outcome = outcome,
      .http_code = job->result->http_code,
      .status_code = lf_status_code(status),
      .message = lf_status_message(status),
      .elapsed_ms = (long)(now - job->attempt_start_ms),
      .wait_ms = wait_ms,
  };
  if (outcome == LF_LLM_ATTEMPT_RETRY)
    LF_LOG_INFO("llm request %zu '%s': attempt %d/%d failed, retrying in "
                "%ld ms: %s",
                a.request_index, a.tag, a.attempt, o->max_attempts, wait_ms,
                a.message);
  else if (outcome == LF_LLM_ATTEMPT_FAILED)
    LF_LOG_DEBUG("llm request %zu '%s': attempt %d failed, giving up: %s",
                 a.request_index, a.tag, a.attempt, a.message);
  else
    LF_LOG_DEBUG("llm request %zu '%s': attempt %d: HTTP %ld in %ld ms",
                 a.request_index, a.tag, a.attempt, a.http_code, a.elapsed_ms);
  if (o->on_attempt)
    o->on_attempt(&a, o->on_attempt_user);
}

static void complete_attempt(job_t *job, CURLcode rc, int64_t now) {
  lf_llm_client_t *client = job->client;
  curl_multi_remove_handle(client->multi, job->easy);
  long http = 0;
  if (curl_easy_getinfo(job->easy, CURLINFO_RESPONSE_CODE, &http) != CURLE_OK)
    http = 0;
  job->result->http_code = http;
  free(job->result->content);
  free(job->result->finish_reason);
  job->result->content = job->result->finish_reason = NULL;
  job->result->usage = (lf_llm_usage_t){0};

  bool retryable = false;
  lf_status_t status = attempt_status(job, rc, http, &retryable);
  if (!status) {
    report_attempt(job, LF_LLM_ATTEMPT_OK, NULL, 0, now);
    finish_job(job, LF_OK, now);
    return;
  }
  if (retryable && job->result->attempts < client->opts.max_attempts) {
    long wait = job->hdr.retry_after_ms_header >= 0
                    ? job->hdr.retry_after_ms_header
                    : job->hdr.retry_after_ms;
    if (wait > client->opts.retry_after_max_ms)
      wait = client->opts.retry_after_max_ms;
    if (wait < 0)
      wait = backoff_ms(client, job->result->attempts);
    report_attempt(job, LF_LLM_ATTEMPT_RETRY, status, wait, now);
    lf_status_free(status);
    job->state = JOB_WAITING;
    job->ready_at_ms = now + wait;
    return;
  }
  report_attempt(job, LF_LLM_ATTEMPT_FAILED, status, 0, now);
  if (job->result->attempts > 1) {
    lf_status_t summary =
        LF_STATUS(lf_status_code(status), "%s (gave up after %d attempts)",
                  lf_status_message(status), job->result->attempts);
    lf_status_free(status);
    status = summary;
  }
  finish_job(job, status, now);
}

/* ---- Batches
 * ---------------------------------------------------------------*/

/* Ends every unfinished job with a copy of `why` (after detaching it). */
static void abandon_jobs(job_t *jobs, size_t count, lf_status_t why) {
  int64_t now = now_ms();
  for (size_t i = 0; i < count; ++i) {
    job_t *job = &jobs[i];
    if (job->state == JOB_DONE)
      continue;
    if (job->state == JOB_RUNNING)
      curl_multi_remove_handle(job->client->multi, job->easy);
    finish_job(job,
               LF_STATUS(LF_STATUS_CANCELLED, "batch abandoned: %s",
                         lf_status_message(why)),
               now);
  }
}

lf_status_t lf_llm_client_run_batch(lf_llm_client_t *client,
                                    const lf_llm_request_t *requests,
                                    size_t count, lf_llm_result_t *results) {
  return lf_llm_client_run_batch_within(client, requests, count, results, 0);
}

/* Ends every unfinished job because the batch's time budget ran out. */
static void expire_jobs(job_t *jobs, size_t count, long budget_ms,
                        int64_t now) {
  for (size_t i = 0; i < count; ++i) {
    job_t *job = &jobs[i];
    if (job->state == JOB_DONE)
      continue;
    if (job->state == JOB_RUNNING)
      curl_multi_remove_handle(job->client->multi, job->easy);
    finish_job(job,
               LF_STATUS(LF_STATUS_DEADLINE_EXCEEDED,
                         "POST %s: the batch's time budget of %ld ms ran out "
                         "(%s)",
                         job->client->endpoint, budget_ms,
                         job->state == JOB_RUNNING   ? "request in flight"
                         : job->state == JOB_WAITING ? "waiting to retry"
                                                     : "never sent"),
               now);
  }
}

lf_status_t lf_llm_client_run_batch_within(lf_llm_client_t *client,
                                           const lf_llm_request_t *requests,
                                           size_t count,
                                           lf_llm_result_t *results,
                                           long time_budget_ms) {
  if (count > 0 && !results)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "results is NULL");
  for (size_t i = 0; i < count; ++i)
    memset(&results[i], 0, sizeof(results[i]));
  lf_status_t status = LF_OK;
  if (!client || (count > 0 && !requests)) {
    status = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "run_batch needs a client and requests");
    for (size_t i = 0; i < count; ++i)
      results[i].status = LF_STATUS(LF_STATUS_CANCELLED, "batch not run: %s",
                                    lf_status_message(status));
    return status;
  }
  if (count == 0)
    return LF_OK;
  job_t *jobs = calloc(count, sizeof(*jobs));
  if (!jobs) {
    for (size_t i = 0; i < count; ++i)
      results[i].status =
          LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  size_t remaining = count;
  for (size_t i = 0; i < count; ++i) {
    job_t *job = &jobs[i];
    job->client = client;
    job->index = i;
    job->request = &requests[i];
    job->result = &results[i];
    job->state = JOB_QUEUED;
    lf_strbuf_init(&job->body, client->opts.max_response_bytes);
    lf_status_t built = build_payload(client, job);
    if (built) {
      finish_job(job, built, now_ms());
      --remaining;
    }
  }

  const int max_running = client->opts.max_concurrency;
  const int64_t deadline =
      time_budget_ms > 0 ? now_ms() + time_budget_ms : INT64_MAX;
  int running = 0;
  size_t next_queued = 0;
  while (remaining > 0) {
    int64_t now = now_ms();
    if (now >= deadline) {
      expire_jobs(jobs, count, time_budget_ms, now);
      break;
    }
    /* Start what may start: due retries first, then new requests. */
    for (size_t i = 0; i < count && running < max_running; ++i) {
      job_t *job = &jobs[i];
      bool due = job->state == JOB_WAITING && job->ready_at_ms <= now;
      if (!due)
        continue;
      lf_status_t s = start_attempt(job, now);
      if (s) {
        finish_job(job, s, now);
        --remaining;
      } else {
        ++running;
      }
    }
    while (running < max_running && next_queued < count) {
      job_t *job = &jobs[next_queued++];
      if (job->state != JOB_QUEUED)
        continue;
      lf_status_t s = start_attempt(job, now);
      if (s) {
        finish_job(job, s, now);
        --remaining;
      } else {
        ++running;
      }
    }

    int still_running = 0;
    CURLMcode mc = curl_multi_perform(client->multi, &still_running);
    if (mc != CURLM_OK) {
      status = LF_STATUS(LF_STATUS_INTERNAL, "curl_multi_perform: %s",
                         curl_multi_strerror(mc));
      goto out_abandon;
    }
    bool progressed = false;
    CURLMsg *msg;
    int queued_msgs;
    while ((msg = curl_multi_info_read(client->multi, &queued_msgs))) {
      if (msg->msg != CURLMSG_DONE)
        continue;
      job_t *job = NULL;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&job);
      CURLcode rc = msg->data.result;
      if (!job)
        continue;
      --running;
      progressed = true;
      complete_attempt(job, rc, now_ms());
      if (job->state == JOB_DONE)
        --remaining;
    }
    /* Streams that went quiet after their headers are broken, whatever the
     * total timeout still allows. Checked here, per job, rather than left
     * to curl's progress callback, whose calls on an idle transfer depend
     * on how curl schedules the multi handle. */
    const long idle = client->opts.stream_idle_timeout_ms;
    if (idle > 0) {
      now = now_ms();
      for (size_t i = 0; i < count; ++i) {
        job_t *job = &jobs[i];
        if (job->state != JOB_RUNNING || !job->sse ||
            now - job->last_byte_ms < idle)
          continue;
        job->idle_expired = true;
        --running;
        progressed = true;
        complete_attempt(job, CURLE_OK, now);
        if (job->state == JOB_DONE)
          --remaining;
      }
    }
    if (remaining == 0)
      break;
    if (progressed)
      continue; /* a slot may have opened */

    /* Sleep until curl has work, a retry is due, or 1 s passes. */
    long timeout = 1000;
    if (running < max_running) {
      now = now_ms();
      if (next_queued < count)
        timeout = 0;
      for (size_t i = 0; i < count; ++i)
        if (jobs[i].state == JOB_WAITING) {
          int64_t left = jobs[i].ready_at_ms - now;
          if (left < timeout)
            timeout = left < 0 ? 0 : (long)left;
        }
    }
    if (running > 0 && idle > 0) {
      now = now_ms();
      for (size_t i = 0; i < count; ++i)
        if (jobs[i].state == JOB_RUNNING && jobs[i].sse) {
          int64_t left = jobs[i].last_byte_ms + idle - now;
          if (left < timeout)
            timeout = left < 0 ? 0 : (long)left;
        }
    }
    if (running > 0) {
      long curl_timeout = -1;
      curl_multi_timeout(client->multi, &curl_timeout);
      if (curl_timeout >= 0 && curl_timeout < timeout)
        timeout = curl_timeout;
    }
    if (deadline != INT64_MAX) {
      int64_t left = deadline - now_ms();
      if (left < timeout)
        timeout = left < 0 ? 0 : (long)left;
    }
    if (timeout > 0) {
      mc = curl_multi_poll(client->multi, NULL, 0, (int)timeout, NULL);
      if (mc != CURLM_OK) {
        status = LF_STATUS(LF_STATUS_INTERNAL, "curl_multi_poll: %s",
                           curl_multi_strerror(mc));
        goto out_abandon;
      }
    }
  }
  free(jobs);
  return LF_OK;

out_abandon:
  abandon_jobs(jobs, count, status);
  free(jobs);
  return status;
}

lf_status_t lf_llm_client_complete(lf_llm_client_t *client,
                                   const lf_llm_request_t *request,
                                   lf_llm_result_t *result) {
  if (!result)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "result is NULL");
  lf_status_t batch = lf_llm_client_run_batch(client, request, 1, result);
  lf_status_t status = result->status;
  result->status = LF_OK;
  if (batch) {
    lf_status_free(status);
    return batch;
  }
  return status;
}
