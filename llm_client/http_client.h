/* http_client.h - an OpenAI-compatible chat-completions client.
 *
 * POSTs {base_url}/chat/completions over libcurl and reads the reply, so it
 * works with OpenAI, vLLM, llama.cpp's server and Ollama (all of which serve
 * /v1/chat/completions; the base URL includes the /v1). Requests run in
 * batches on one curl multi handle with at most max_concurrency in flight;
 * each request has its own retry state, and a request waiting out a backoff
 * never holds a slot or blocks the others.
 *
 * Replies are streamed by default ("stream": true, with
 * "stream_options": {"include_usage": true}): a text/event-stream response
 * is parsed as it arrives (lf_llm_sse_parser_*), choices[0].delta.content
 * accumulated, finish_reason and usage taken from whichever chunk carries
 * them. A response of any other Content-Type (a server that ignores
 * "stream") is read whole as JSON, choices[0].message.content.
 *
 * Timeouts, chosen so that a slow but healthy generation is never cut (a
 * reasoning model or a local 70B model may think for minutes before its
 * first token):
 *  - connect_timeout_ms for the connection;
 *  - total_timeout_ms for one attempt, headers to last byte (20 minutes by
 *    default); before the response's first byte this is the only limit, so
 *    a non-streaming server may think for as long as it allows;
 *  - stream_idle_timeout_ms, for an event stream only, counted from its
 *    response headers: no byte at all (keep-alive comments count) for that
 *    long means the stream is broken, and the attempt is retried;
 *  - the old low-speed rule (low_speed_limit_bps / low_speed_time_s) is off
 *    by default and kept for callers that ask for it.
 *
 * Safety rules, all enforced here rather than left to callers:
 *  - the API key is read from the environment only (the variable named by
 *    api_key_env), sent as "Authorization: Bearer", and never logged, never
 *    put in a status message (server text is scrubbed of it, including the
 *    text of an error event inside a stream);
 *  - TLS verification is always on; https is required except to loopback
 *    (127.0.0.0/8, ::1, localhost) unless allow_insecure_http is set;
 *    redirects are followed to https URLs only, at most max_redirects times;
 *  - every response is capped at max_response_bytes while it is received;
 *    for a stream the cap applies to the accumulated content and to the
 *    bytes buffered for any single event;
 *  - retries (exponential backoff with jitter, or the server's Retry-After
 *    / retry-after-ms within a cap) happen on 408, 409, 429, 5xx, timeouts,
 *    dropped connections (curl 28, 52, 55, 56, 18, 16, 92) and broken
 *    streams (an error event, an idle stream, a stream that ends with
 *    neither [DONE] nor a finish_reason), never on other 4xx, on a 429
 *    whose error code is insufficient_quota, on a refused connection or an
 *    unresolvable host. A retry re-sends the whole request; what a broken
 *    stream delivered is discarded. A request takes at most
 *    max_attempts * total_timeout_ms plus its waits.
 *
 * Redirects keep the POST body (CURLOPT_POSTREDIR); libcurl drops the
 * Authorization header when a redirect leads to another host.
 *
 * A client is used from one thread at a time.
 */
#ifndef LF_LLM_CLIENT_HTTP_CLIENT_H
#define LF_LLM_CLIENT_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/// What became of one attempt of one request.
typedef enum lf_llm_attempt_outcome_e {
  LF_LLM_ATTEMPT_OK = 0, /* the request succeeded with this attempt */
  LF_LLM_ATTEMPT_RETRY,  /* failed; another attempt follows after wait_ms */
  LF_LLM_ATTEMPT_FAILED, /* failed; the request gives up with this status */
} lf_llm_attempt_outcome_t;

/// One attempt, as reported to the attempt hook. Every pointer is borrowed
/// and valid only during the hook call. Never contains the API key.
typedef struct lf_llm_attempt_s {
  size_t request_index; /* index in the batch */
  const char *tag;      /* the request's tag, or "" */
  int attempt;          /* 1-based */
  lf_llm_attempt_outcome_t outcome;
  long http_code;               /* 0 when no HTTP response arrived */
  lf_status_code_t status_code; /* LF_STATUS_OK for a success */
  const char *message;          /* why it failed; "" for a success */
  long elapsed_ms;              /* duration of this attempt */
  long wait_ms;                 /* delay before the next; 0 unless RETRY */
} lf_llm_attempt_t;

/// Called on the batch's thread after every attempt, in completion order.
typedef void (*lf_llm_attempt_hook_t)(const lf_llm_attempt_t *attempt,
                                      void *user);

/// Client settings. Fill with lf_llm_client_options_init(), then override.
/// Strings are borrowed during lf_llm_client_create() only (it copies them).
typedef struct lf_llm_client_options_s {
  const char *base_url;     /* required, e.g. "https://api.openai.com/v1" */
  const char *model;        /* required unless every request names one */
  const char *api_key_env;  /* variable holding the key; "OPENAI_API_KEY" */
  double temperature;       /* sent when >= 0; default 0.2 */
  int max_tokens;           /* sent as max_tokens when > 0; default 0 (omit) */
  bool allow_insecure_http; /* permit http:// to non-loopback hosts */

  bool stream; /* ask for an event stream; default true. false: no "stream"
                  member is sent, and a server answers whole */

  long connect_timeout_ms;     /* default 10000 */
  long total_timeout_ms;       /* per attempt; default 1200000 (20 min) */
  long stream_idle_timeout_ms; /* an event stream that sends no byte for this
                                  long after its headers is broken (retried);
                                  default 300000; 0: off */
  long low_speed_limit_bps;    /* abort below this many bytes/s ... */
  long low_speed_time_s;       /* ... for this long; default 0 and 0 (off).
                                  Counts the time the server spends before
                                  its first byte: cuts slow thinkers. */
  size_t max_response_bytes;   /* default 8 MiB; enforced while receiving */
  int max_redirects;           /* https-only redirects; default 3 */

  int max_attempts;        /* first try plus retries; default 5 */
  long backoff_base_ms;    /* first backoff; default 1000 */
  long backoff_max_ms;     /* cap of the exponential backoff; 30000 */
  long retry_after_max_ms; /* cap on Retry-After / retry-after-ms; 60000 */
  uint64_t jitter_seed;    /* 0: seeded from the clock; else reproducible */

  int max_concurrency; /* requests in flight at once; default 8 */

  lf_llm_attempt_hook_t on_attempt; /* optional */
  void *on_attempt_user;
} lf_llm_client_options_t;

/// One chat message; both strings borrowed for the duration of a batch.
typedef struct lf_llm_message_s {
  const char *role; /* "system", "user", "assistant" */
  const char *content;
} lf_llm_message_t;

/// One chat request; everything borrowed for the duration of a batch.
typedef struct lf_llm_request_s {
  const lf_llm_message_t *messages; /* at least one */
  size_t message_count;
  const char *model; /* NULL: the client's model */
  const char *tag;   /* label for logs and the hook (e.g. a fingerprint) */
} lf_llm_request_t;

/// Token counts, when the server reported them.
typedef struct lf_llm_usage_s {
  bool present; /* false when the reply had no usage object */
  long prompt_tokens;
  long completion_tokens;
} lf_llm_usage_t;

/// The outcome of one request. Owned by the caller; release the members
/// with lf_llm_result_clear().
typedef struct lf_llm_result_s {
  lf_status_t status;  /* NULL on success; else owned, the final error */
  long http_code;      /* of the last attempt; 0 if none got a response */
  char *content;       /* choices[0].message.content, or the concatenated
                          choices[0].delta.content of a stream; NULL on
                          failure */
  char *finish_reason; /* e.g. "stop", "length"; NULL when absent */
  lf_llm_usage_t usage;
  int attempts;    /* attempts made; 0 if refused before sending */
  long elapsed_ms; /* first attempt's start to the end, waits included */
} lf_llm_result_t;

/// Opaque client.
typedef struct lf_llm_client_s lf_llm_client_t;

/// Fills `options` with the defaults listed above; base_url and model NULL.
void lf_llm_client_options_init(lf_llm_client_options_t *options);

/// Validates `options`, reads the key from the environment and makes a
/// client; no network I/O happens here. INVALID_ARGUMENT for a bad option or
/// URL; FAILED_PRECONDITION for plain http to a non-loopback host without
/// allow_insecure_http, or for a non-loopback endpoint whose key variable is
/// unset or empty (a loopback server may go without a key: no Authorization
/// header is sent then). On success `*out_client` is owned by the caller
/// (lf_llm_client_destroy); on failure it is NULL.
lf_status_t lf_llm_client_create(const lf_llm_client_options_t *options,
                                 lf_llm_client_t **out_client);

/// Frees the client and wipes its copy of the key. Accepts NULL.
void lf_llm_client_destroy(lf_llm_client_t *client);

/// The endpoint the client POSTs to ({base_url}/chat/completions), borrowed.
const char *lf_llm_client_endpoint(const lf_llm_client_t *client);

/// Runs `count` requests, at most max_concurrency at a time, and fills
/// `results[i]` for `requests[i]` (any previous contents are overwritten,
/// not freed). Returns non-OK only when the batch itself could not run (bad
/// arguments, curl multi failure, out of memory); per-request failures are
/// in results[i].status. A non-OK return still leaves every result
/// initialized with a status, so lf_llm_result_clear() is always safe.
lf_status_t lf_llm_client_run_batch(lf_llm_client_t *client,
                                    const lf_llm_request_t *requests,
                                    size_t count, lf_llm_result_t *results);

/// run_batch with a time budget: when `time_budget_ms` (> 0) have passed
/// since the call, transfers in flight are aborted and every request not yet
/// done (in flight, waiting out a backoff, or never sent) ends with
/// DEADLINE_EXCEEDED ("the batch's time budget of N ms ran out"). A budget
/// of 0 means none (exactly lf_llm_client_run_batch()).
lf_status_t lf_llm_client_run_batch_within(lf_llm_client_t *client,
                                           const lf_llm_request_t *requests,
                                           size_t count,
                                           lf_llm_result_t *results,
                                           long time_budget_ms);

/// One request: a batch of one. Returns the request's status and hands it
/// to the caller (result->status is left NULL, so there is one owner);
/// the other members of `result` are filled as by run_batch.
lf_status_t lf_llm_client_complete(lf_llm_client_t *client,
                                   const lf_llm_request_t *request,
                                   lf_llm_result_t *result);

/// Frees the members of `result` and zeroes it. Accepts NULL.
void lf_llm_result_clear(lf_llm_result_t *result);

/// Parses a chat-completions response exactly as the client does after a
/// transfer: `len` bytes of `body` (need not be NUL-terminated; NULL allowed
/// when `len` is 0) received with HTTP status `http_code`. `result` is
/// overwritten (not freed first): http_code is set; for a 2xx status,
/// content, finish_reason and usage are filled and OK is returned, or
/// DATA_LOSS when the body is not JSON or lacks choices[0].message.content;
/// for any other status the error the client reports is returned (code per
/// HTTP status, server text quoted, scrubbed of the client's key and of
/// anything shaped like a key) and `*out_retryable` (may be NULL) says
/// whether the client would retry. Release `result` with
/// lf_llm_result_clear(). No network I/O. Used by the fuzz target.
lf_status_t lf_llm_parse_chat_response(const lf_llm_client_t *client,
                                       long http_code, const char *body,
                                       size_t len, lf_llm_result_t *result,
                                       bool *out_retryable);

/// What the response headers of one attempt said.
typedef struct lf_llm_response_headers_s {
  long retry_after_ms;        /* from Retry-After; -1 when absent */
  long retry_after_ms_header; /* from retry-after-ms; -1 when absent */
  bool too_large;    /* Content-Length declared more than the response cap */
  bool event_stream; /* Content-Type is text/event-stream */
} lf_llm_response_headers_t;

/// Sets both delays to -1, too_large and event_stream to false.
void lf_llm_response_headers_init(lf_llm_response_headers_t *headers);

/// Reads one raw header line (`len` bytes, CRLF included or not) into
/// `headers` as the client's header callback does: Retry-After (seconds or
/// an HTTP date) and retry-after-ms, each capped at 1e9 ms; Content-Type
/// text/event-stream (parameters allowed) sets event_stream; an "HTTP/"
/// status line resets the delays and event_stream (a new response after a
/// redirect or a 1xx); a Content-Length
/// above the client's response cap sets too_large and returns false (the
/// transfer is refused). Returns true otherwise.
bool lf_llm_parse_response_header(const lf_llm_client_t *client,
                                  const char *line, size_t len,
                                  lf_llm_response_headers_t *headers);

/// Incremental parser of a chat-completions event stream (server-sent
/// events, text/event-stream), exactly as the client runs it on a streamed
/// reply. Opaque; one per response.
typedef struct lf_llm_sse_parser_s lf_llm_sse_parser_t;

/// Makes a parser for a response to `client` (borrowed; it must outlive the
/// parser): the client supplies the cap (max_response_bytes, applied to the
/// accumulated content and to the bytes buffered for one event), the
/// endpoint named in messages, and the key that server text is scrubbed of.
/// No network I/O. On success `*out_parser` is owned by the caller
/// (lf_llm_sse_parser_destroy); on failure it is NULL.
lf_status_t lf_llm_sse_parser_create(const lf_llm_client_t *client,
                                     lf_llm_sse_parser_t **out_parser);

/// Feeds the next `len` bytes of the response body (NULL allowed when `len`
/// is 0). Events may be split anywhere: mid-line, mid-field name, mid-UTF-8
/// character, between the CR and LF of a CRLF. Lines end in CRLF, LF or CR;
/// a blank line ends an event; ":" lines (keep-alives) and fields other
/// than "data" are ignored; an event's data lines are joined with "\n".
/// Each event's data is a JSON chunk, except "[DONE]", after which every
/// byte is ignored. From a chunk: choices[0].delta.content is appended,
/// choices[0].finish_reason (a string) replaces the one kept, and a usage
/// object with prompt_tokens and completion_tokens is kept.
/// Fails, and `*out_retryable` (may be NULL) says whether the client would
/// retry, on: a chunk that carries an "error" (UNAVAILABLE, retryable, the
/// server's scrubbed message quoted); a chunk that is not JSON (DATA_LOSS);
/// content, or one event (its data so far plus the line being read;
/// comments are never kept), over the cap (RESOURCE_EXHAUSTED). The
/// outcome never depends on how the bytes were split into feeds. The first
/// failure sticks: every later feed or finish returns a copy of it.
lf_status_t lf_llm_sse_parser_feed(lf_llm_sse_parser_t *parser,
                                   const char *data, size_t len,
                                   bool *out_retryable);

/// True once the "[DONE]" event has been parsed.
bool lf_llm_sse_parser_done(const lf_llm_sse_parser_t *parser);

/// Ends the stream (the connection closed or the transfer ended) and moves
/// what it delivered into `result`: content, finish_reason and usage are
/// set (their old values are not freed; the other members are untouched).
/// A stream complete without "[DONE]" is accepted when a finish_reason
/// arrived; an unterminated last line "data: [DONE]" counts as [DONE].
/// Fails with the sticky error of a failed feed; with UNAVAILABLE,
/// retryable, "stream ended before [DONE]" when neither [DONE] nor a
/// finish_reason arrived; with DATA_LOSS when no chunk carried a
/// choices[0].delta.content string. On failure `result` is untouched. A
/// parser is finished once; later calls fail with FAILED_PRECONDITION.
lf_status_t lf_llm_sse_parser_finish(lf_llm_sse_parser_t *parser,
                                     lf_llm_result_t *result,
                                     bool *out_retryable);

/// Frees the parser and whatever it accumulated. Accepts NULL.
void lf_llm_sse_parser_destroy(lf_llm_sse_parser_t *parser);

#ifdef __cplusplus
}
#endif

#endif /* LF_LLM_CLIENT_HTTP_CLIENT_H */
