/* acquire.c - the acquire loop: cache, provider rounds, builds, repairs,
 * budgets (acquire.h).
 *
 * One call runs in rounds. A round takes every subgraph that waits for a
 * request (its first, or a repair), admits as many as the budgets allow,
 * sends them together (one curl multi batch for openai), extracts and
 * builds the replies, and leaves the failures waiting for the next round.
 */
#include "llm_client/acquire.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/strbuf.h"
#include "llm_client/prompt.h"
#include "llm_client/replay.h"
#include "llm_client/reply.h"

#define REDACTED "[REDACTED]"
#define MESSAGE_MAX 600 /* bytes of an attempt's message kept */
#define SECRET_MIN 8    /* shorter "keys" are not searched for */

/* ---- Names ---------------------------------------------------------------*/

const char *lf_acquire_provider_name(lf_acquire_provider_t p) {
  switch (p) {
  case LF_PROVIDER_NONE:
    return "none";
  case LF_PROVIDER_OPENAI:
    return "openai";
  case LF_PROVIDER_REPLAY:
    return "replay";
  }
  return "?";
}

lf_status_t lf_acquire_provider_parse(const char *name,
                                      lf_acquire_provider_t *out) {
  static const lf_acquire_provider_t all[] = {
      LF_PROVIDER_NONE, LF_PROVIDER_OPENAI, LF_PROVIDER_REPLAY};
  for (size_t i = 0; i < 3; ++i)
    if (name && strcmp(name, lf_acquire_provider_name(all[i])) == 0) {
      *out = all[i];
      return LF_OK;
    }
  return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                   "unknown provider '%.40s' (expected openai, replay or none)",
                   name ? name : "");
}

const char *lf_acquire_outcome_name(lf_acquire_outcome_t o) {
  static const char *const names[] = {"ok",
                                      "cached",
                                      "cached-rejected",
                                      "failed",
                                      "budget-exhausted",
                                      "unavailable",
                                      "skipped",
                                      "error"};
  return (unsigned)o < sizeof(names) / sizeof(names[0]) ? names[o] : "?";
}

const char *lf_acquire_budget_name(lf_acquire_budget_t b) {
  static const char *const names[] = {"", "requests", "tokens", "wall"};
  return (unsigned)b < 4 ? names[b] : "?";
}

const char *lf_acquire_attempt_outcome_name(lf_acquire_attempt_outcome_t o) {
  static const char *const names[] = {"built",     "build-failed",
                                      "no-kernel", "provider-error",
                                      "budget",    "error"};
  return (unsigned)o < sizeof(names) / sizeof(names[0]) ? names[o] : "?";
}

void lf_acquire_options_init(lf_acquire_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->provider = LF_PROVIDER_REPLAY;
  lf_llm_client_options_init(&o->client);
  o->model = "gpt-4o";
  o->max_attempts = 4;
  o->max_concurrency = 8;
  o->build_concurrency = 1;
}

/* ---- State ---------------------------------------------------------------*/

typedef struct job_s {
  const lf_acquire_task_t *task;
  lf_acquire_result_t *res;
  lf_prompt_subject_t subject;
  lf_cache_key_t key;
  bool pending;     /* waits for a request */
  int attempt;      /* requests made */
  char *first;      /* the first request's user message */
  char *last_reply; /* the previous reply (redacted) */
  char *last_error; /* why it failed */
  /* This round. */
  char *repair;             /* the repair message */
  lf_llm_message_t msgs[4]; /* borrowed from the strings above */
  size_t msg_count;
  char *reply;  /* redacted */
  char *kernel; /* extracted; handed to the result on success */
  size_t line_offset;
  bool to_build;
  lf_acquire_build_t built;
  lf_status_t build_status;
  long build_ms;
} job_t;

typedef struct ctx_s {
  const lf_acquire_options_t *o;
  lf_acquire_report_t *report;
  job_t *jobs;
  size_t count;
  lf_prompt_set_t *prompts;
  char *secret; /* the key's value, only to redact replies; wiped */
  char *replay_dir;
  char *system;
  lf_llm_client_t *client;
  lf_status_t client_status; /* why there is no client */
  int64_t start_ms, deadline_ms;
  /* build pool */
  pthread_mutex_t lock;
  size_t next_build;
  job_t **build_list;
  size_t build_count;
} ctx_t;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *xstrdup(const char *s) { return strdup(s ? s : ""); }

/* Replaces every occurrence of the secret in `text` (heap) with REDACTED. */
static char *redact(const ctx_t *c, char *text) {
  if (!c->secret || !text || !strstr(text, c->secret))
    return text;
  size_t klen = strlen(c->secret);
  lf_strbuf_t out;
  lf_strbuf_init(&out, strlen(text) + 64 * sizeof(REDACTED) + 1024);
  const char *p = text;
  for (const char *hit = strstr(p, c->secret); hit;
       hit = strstr(p, c->secret)) {
    lf_status_free(lf_strbuf_append(&out, p, (size_t)(hit - p)));
    lf_status_free(lf_strbuf_append_str(&out, REDACTED));
    p = hit + klen;
  }
  lf_status_free(lf_strbuf_append_str(&out, p));
  memset(text, 0, strlen(text));
  free(text);
  return lf_strbuf_take(&out);
}

/* A short, single-line copy of `text` for messages and logs. */
static char *shorten(const char *text) {
  const char *t = text ? text : "";
  size_t n = strlen(t);
  if (n > MESSAGE_MAX)
    n = MESSAGE_MAX;
  char *s = malloc(n + 4);
  if (!s)
    return NULL;
  for (size_t i = 0; i < n; ++i)
    s[i] = t[i] == '\n' || t[i] == '\r' || t[i] == '\t' ? ' ' : t[i];
  s[n] = '\0';
  if (n < strlen(t))
    strcpy(s + n, "...");
  return s;
}

static lf_acquire_attempt_t *new_attempt(job_t *j) {
  lf_acquire_result_t *r = j->res;
  lf_acquire_attempt_t *a =
      realloc(r->attempts, (r->attempt_count + 1) * sizeof(*a));
  if (!a)
    return NULL;
  r->attempts = a;
  a = &r->attempts[r->attempt_count++];
  memset(a, 0, sizeof(*a));
  a->repair = j->attempt > 1;
  return a;
}

/* Ends a task: no more requests. */
static void finish(ctx_t *c, job_t *j, lf_acquire_outcome_t outcome,
                   lf_acquire_budget_t budget, const char *message) {
  j->pending = false;
  j->res->outcome = outcome;
  j->res->budget = budget;
  free(j->res->message);
  j->res->message = shorten(message);
  j->res->elapsed_ms = (long)(now_ms() - c->start_ms);
  if (budget != LF_BUDGET_NONE && c->report->exhausted == LF_BUDGET_NONE)
    c->report->exhausted = budget;
  if (outcome == LF_ACQUIRE_OK || outcome == LF_ACQUIRE_CACHED)
    LF_LOG_INFO("acquire: %s: %s after %zu attempt(s), %ld ms", j->task->name,
                lf_acquire_outcome_name(outcome), j->res->attempt_count,
                j->res->elapsed_ms);
  else
    LF_LOG_INFO("acquire: %s: %s%s%s after %zu attempt(s): %s", j->task->name,
                lf_acquire_outcome_name(outcome), budget ? " (" : "",
                budget ? lf_acquire_budget_name(budget) : "",
                j->res->attempt_count, j->res->message ? j->res->message : "");
  if (budget)
    LF_LOG_INFO("acquire: %s: the %s budget ran out; it keeps its original ops",
                j->task->name, lf_acquire_budget_name(budget));
}

/* ---- Validation and set-up -----------------------------------------------*/

static lf_status_t check_inputs(const lf_acquire_task_t *tasks, size_t count,
                                const lf_acquire_options_t *o) {
  if (!o || (count && !tasks))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "acquire needs options and tasks");
  if (o->max_attempts < 1 || o->max_attempts > 100)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "max-attempts %d out of 1..100", o->max_attempts);
  if (o->max_concurrency < 1 || o->max_concurrency > 256)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "max-concurrency %d out of 1..256", o->max_concurrency);
  if (o->build_concurrency < 1 || o->build_concurrency > 64)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "build-concurrency %d out of 1..64", o->build_concurrency);
  if (o->max_requests < 0 || o->max_tokens < 0 || o->max_wall_ms < 0)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "budgets must be >= 0");
  if (o->provider != LF_PROVIDER_NONE && !o->build)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "acquire needs a build callback");
  if (!o->model || !o->model[0])
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "acquire needs a model name");
  if (o->cache && (!o->toolchain || !o->toolchain[0]))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "a cache needs the toolchain string for its key");
  if (o->record_dir && o->provider != LF_PROVIDER_OPENAI)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "record needs provider openai (it writes real exchanges)");
  for (size_t i = 0; i < count; ++i) {
    const lf_acquire_task_t *t = &tasks[i];
    if (!t->name || !t->fingerprint || !t->klass || !t->ir || !t->signature ||
        !t->arch)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "task %zu lacks name, fingerprint, class, ir, signature "
                       "or arch",
                       i);
    size_t n = strlen(t->fingerprint);
    bool hex = n == 64;
    for (size_t k = 0; hex && k < n; ++k)
      hex = (t->fingerprint[k] >= '0' && t->fingerprint[k] <= '9') ||
            (t->fingerprint[k] >= 'a' && t->fingerprint[k] <= 'f');
    if (!hex)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "task %zu (%.40s): fingerprint is not 64 lower-case hex",
                       i, t->name);
  }
  return LF_OK;
}

/* Looks the cache up; true when that ended the task. */
static bool try_cache(ctx_t *c, job_t *j) {
  const lf_acquire_options_t *o = c->o;
  if (!o->cache)
    return false;
  lf_status_t s = lf_cache_key_digest(&j->key, j->res->cache_digest);
  if (s) {
    lf_log_status(LF_LOG_WARN, "acquire: cache key", s);
    j->res->cache_digest[0] = '\0';
    return false;
  }
  lf_cache_entry_t *entry = NULL;
  lf_cache_outcome_t outcome = LF_CACHE_MISS;
  s = lf_cache_lookup(o->cache, &j->key, &entry, &outcome);
  if (s) {
    /* A corrupt entry is reported and never trusted: ask again. */
    lf_log_status(LF_LOG_WARN, "acquire: cache", s);
    return false;
  }
  if (outcome != LF_CACHE_HIT) {
    LF_LOG_INFO("acquire: %s: cache miss (%.12s)", j->task->name,
                j->res->cache_digest);
    return false;
  }
  j->res->cache_entry = entry;
  j->res->kernel = xstrdup(entry->kernel);
  free(j->res->provider);
  free(j->res->model);
  j->res->provider = xstrdup(entry->provenance.provider);
  j->res->model = xstrdup(entry->provenance.model);
  LF_LOG_INFO("acquire: %s: cache hit %.12s (%s)", j->task->name,
              j->res->cache_digest, lf_cache_verdict_name(entry->verdict));
  if (entry->verdict == LF_CACHE_REJECTED)
    finish(c, j, LF_ACQUIRE_CACHED_REJECTED, LF_BUDGET_NONE,
           "the cached kernel was rejected by verification");
  else
    finish(c, j, LF_ACQUIRE_CACHED, LF_BUDGET_NONE, "");
  return true;
}

/* ---- Requests ------------------------------------------------------------*/

/* Builds this round's conversation for `j`. */
static lf_status_t make_messages(ctx_t *c, job_t *j) {
  lf_status_t s = LF_OK;
  if (!j->first) {
    lf_strbuf_t b;
    lf_strbuf_init(&b, (size_t)1 << 20);
    s = lf_prompt_first(c->prompts, &j->subject, &b);
    j->first = s ? NULL : lf_strbuf_take(&b);
    lf_strbuf_free(&b);
    if (s)
      return s;
  }
  j->msgs[0] = (lf_llm_message_t){"system", c->system};
  j->msgs[1] = (lf_llm_message_t){"user", j->first};
  j->msg_count = 2;
  if (j->attempt > 1) {
    lf_strbuf_t prev, rep;
    lf_strbuf_init(&prev, LF_PROMPT_MAX_PREVIOUS + 256);
    lf_strbuf_init(&rep, 16384);
    s = lf_prompt_previous(j->last_reply, &prev);
    if (!s)
      s = lf_prompt_repair(c->prompts, &j->subject, j->attempt - 1,
                           c->o->max_attempts, j->last_error, &rep);
    if (!s) {
      free(j->last_reply);
      j->last_reply = lf_strbuf_take(&prev);
      free(j->repair);
      j->repair = lf_strbuf_take(&rep);
      j->msgs[2] = (lf_llm_message_t){"assistant", j->last_reply};
      j->msgs[3] = (lf_llm_message_t){"user", j->repair};
      j->msg_count = 4;
    }
    lf_strbuf_free(&prev);
    lf_strbuf_free(&rep);
  }
  return s;
}

static long estimate_tokens(const lf_llm_message_t *m, size_t n) {
  size_t bytes = 0;
  for (size_t i = 0; i < n; ++i)
    bytes += strlen(m[i].content ? m[i].content : "");
  return (long)((bytes + 3) / 4);
}

/* Accounts a reply's usage in the attempt and the report. */
static void count_tokens(ctx_t *c, job_t *j, lf_acquire_attempt_t *a,
                         const lf_llm_usage_t *usage, const char *reply) {
  if (usage && usage->present) {
    a->prompt_tokens = usage->prompt_tokens;
    a->completion_tokens = usage->completion_tokens;
  } else {
    a->tokens_estimated = true;
    a->prompt_tokens = estimate_tokens(j->msgs, j->msg_count);
    a->completion_tokens = (long)((strlen(reply ? reply : "") + 3) / 4);
  }
  c->report->prompt_tokens += a->prompt_tokens;
  c->report->completion_tokens += a->completion_tokens;
}

/* What to do with a failed attempt: another round, or the end. */
static void after_failure(ctx_t *c, job_t *j, const char *why) {
  free(j->last_error);
  j->last_error = xstrdup(why);
  if (j->attempt >= c->o->max_attempts) {
    char msg[MESSAGE_MAX + 96];
    char *short_why = shorten(why);
    snprintf(msg, sizeof(msg), "no kernel built in %d attempt(s); last: %s",
             j->attempt, short_why ? short_why : "");
    free(short_why);
    finish(c, j, LF_ACQUIRE_FAILED, LF_BUDGET_NONE, msg);
  }
}

/* Takes a reply (heap, already redacted): extraction, then the build list. */
static void take_reply(ctx_t *c, job_t *j, lf_acquire_attempt_t *a,
                       char *reply) {
  if (c->o->record_dir) { /* before last_reply changes: msgs[2] is it */
    lf_replay_key_t key = {j->task->fingerprint, j->task->arch,
                           lf_prompt_set_major(c->prompts), j->attempt};
    lf_replay_record_t rec = {
        .provider = "openai",
        .model = c->o->model,
        .prompt_version = lf_prompt_set_version(c->prompts),
        .messages = j->msgs,
        .message_count = j->msg_count,
        .reply = reply,
        .usage = {a->tokens_estimated ? false : true, a->prompt_tokens,
                  a->completion_tokens},
    };
    lf_status_t s = lf_replay_write(c->o->record_dir, &key, &rec);
    if (s)
      lf_log_status(LF_LOG_WARN, "acquire: record", s);
  }
  free(j->last_reply);
  j->last_reply = reply;
  j->msg_count = 0; /* the messages may point at the old reply */
  char *kernel = NULL;
  size_t offset = 0;
  lf_status_t s =
      lf_reply_extract_gpu_module(reply, strlen(reply), &kernel, &offset);
  if (s) {
    a->outcome = LF_ATTEMPT_NO_KERNEL;
    a->message = shorten(lf_status_message(s));
    LF_LOG_INFO("acquire: %s: attempt %d: %s", j->task->name, j->attempt,
                lf_status_message(s));
    after_failure(c, j, lf_status_message(s));
    lf_status_free(s);
    return;
  }
  free(j->kernel);
  j->kernel = kernel;
  j->line_offset = offset;
  j->to_build = true;
}

static lf_status_t ask_openai(ctx_t *c, job_t **round, size_t n) {
  lf_llm_request_t *reqs = calloc(n, sizeof(*reqs));
  lf_llm_result_t *results = calloc(n, sizeof(*results));
  if (!reqs || !results) {
    free(reqs);
    free(results);
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < n; ++i)
    reqs[i] = (lf_llm_request_t){round[i]->msgs, round[i]->msg_count,
                                 c->o->model, round[i]->task->name};
  long budget = 0;
  if (c->o->max_wall_ms) {
    budget = (long)(c->deadline_ms - now_ms());
    if (budget < 1)
      budget = 1;
  }
  lf_status_t batch =
      lf_llm_client_run_batch_within(c->client, reqs, n, results, budget);
  if (batch)
    lf_log_status(LF_LOG_WARN, "acquire: batch", batch);
  for (size_t i = 0; i < n; ++i) {
    job_t *j = round[i];
    lf_llm_result_t *r = &results[i];
    lf_acquire_attempt_t *a = new_attempt(j);
    if (!a) {
      finish(c, j, LF_ACQUIRE_ERROR, LF_BUDGET_NONE, "out of memory");
      continue;
    }
    a->latency_ms = r->elapsed_ms;
    a->http_attempts = r->attempts;
    a->http_code = r->http_code;
    if (r->attempts > 0)
      ++c->report->requests;
    if (r->status) {
      a->message = shorten(lf_status_message(r->status));
      bool wall = lf_status_code(r->status) == LF_STATUS_DEADLINE_EXCEEDED &&
                  strstr(lf_status_message(r->status), "time budget");
      a->outcome = wall ? LF_ATTEMPT_BUDGET : LF_ATTEMPT_PROVIDER_ERROR;
      LF_LOG_INFO("acquire: %s: attempt %d: no reply after %ld ms: %s",
                  j->task->name, j->attempt, r->elapsed_ms, a->message);
      if (wall)
        finish(c, j, LF_ACQUIRE_BUDGET, LF_BUDGET_WALL,
               "the wall-time budget ran out while the request was pending");
      else
        finish(c, j, LF_ACQUIRE_UNAVAILABLE, LF_BUDGET_NONE,
               lf_status_message(r->status));
      continue;
    }
    char *reply = redact(c, r->content);
    r->content = NULL;
    free(j->res->provider);
    free(j->res->model);
    j->res->provider = xstrdup("openai");
    j->res->model = xstrdup(c->o->model);
    count_tokens(c, j, a, &r->usage, reply);
    LF_LOG_INFO("acquire: %s: attempt %d: reply in %ld ms (%ld+%ld tokens%s, "
                "finish %s)",
                j->task->name, j->attempt, r->elapsed_ms, a->prompt_tokens,
                a->completion_tokens, a->tokens_estimated ? ", estimated" : "",
                r->finish_reason ? r->finish_reason : "?");
    take_reply(c, j, a, reply ? reply : xstrdup(""));
  }
  for (size_t i = 0; i < n; ++i)
    lf_llm_result_clear(&results[i]);
  free(results);
  free(reqs);
  return LF_OK;
}

static void ask_replay(ctx_t *c, job_t **round, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    job_t *j = round[i];
    lf_acquire_attempt_t *a = new_attempt(j);
    if (!a) {
      finish(c, j, LF_ACQUIRE_ERROR, LF_BUDGET_NONE, "out of memory");
      continue;
    }
    int64_t t0 = now_ms();
    char want[LF_SHA256_HEX_SIZE] = "";
    lf_status_t s = LF_OK;
    if (c->o->replay_strict)
      s = lf_replay_request_sha256(c->o->model, j->msgs, j->msg_count, want);
    lf_replay_key_t key = {j->task->fingerprint, j->task->arch,
                           lf_prompt_set_major(c->prompts), j->attempt};
    lf_replay_entry_t *e = NULL;
    if (!s)
      s = lf_replay_lookup(c->replay_dir, &key,
                           c->o->replay_strict ? want : NULL, &e);
    a->latency_ms = (long)(now_ms() - t0);
    ++c->report->requests;
    if (s) {
      a->outcome = LF_ATTEMPT_PROVIDER_ERROR;
      a->message = shorten(lf_status_message(s));
      LF_LOG_INFO("acquire: %s: attempt %d: replay: %s", j->task->name,
                  j->attempt, lf_status_message(s));
      if (j->attempt > 1 && lf_status_code(s) == LF_STATUS_NOT_FOUND) {
        char msg[MESSAGE_MAX * 2];
        char *last = shorten(j->last_error);
        snprintf(msg, sizeof(msg),
                 "attempt %d failed and the replay set has no attempt %d; "
                 "last: %s",
                 j->attempt - 1, j->attempt, last ? last : "");
        free(last);
        finish(c, j, LF_ACQUIRE_FAILED, LF_BUDGET_NONE, msg);
      } else {
        finish(c, j, LF_ACQUIRE_UNAVAILABLE, LF_BUDGET_NONE,
               lf_status_message(s));
      }
      lf_status_free(s);
      continue;
    }
    free(j->res->provider);
    free(j->res->model);
    j->res->provider = xstrdup(e->provider);
    j->res->model = xstrdup(e->model);
    char *reply = redact(c, e->reply);
    e->reply = NULL;
    count_tokens(c, j, a, &e->usage, reply);
    LF_LOG_INFO("acquire: %s: attempt %d: replayed %s (%s/%s)", j->task->name,
                j->attempt, e->path, e->provider, e->model);
    lf_replay_entry_free(e);
    take_reply(c, j, a, reply ? reply : xstrdup(""));
  }
}

/* ---- Builds --------------------------------------------------------------*/

static void build_one(ctx_t *c, job_t *j) {
  memset(&j->built, 0, sizeof(j->built));
  LF_LOG_INFO("acquire: %s: attempt %d: building (%zu bytes)", j->task->name,
              j->attempt, strlen(j->kernel));
  int64_t t0 = now_ms();
  j->build_status = c->o->build(j->task, j->kernel, j->line_offset,
                                c->o->build_user, &j->built);
  j->build_ms = (long)(now_ms() - t0);
}

static void *build_worker(void *arg) {
  ctx_t *c = arg;
  for (;;) {
    pthread_mutex_lock(&c->lock);
    size_t i = c->next_build++;
    pthread_mutex_unlock(&c->lock);
    if (i >= c->build_count)
      return NULL;
    build_one(c, c->build_list[i]);
  }
}

static void run_builds(ctx_t *c) {
  if (c->build_count == 0)
    return;
  c->next_build = 0;
  size_t threads = (size_t)c->o->build_concurrency;
  if (threads > c->build_count)
    threads = c->build_count;
  pthread_t tid[64];
  size_t started = 0;
  for (size_t t = 1; t < threads; ++t)
    if (pthread_create(&tid[started], NULL, build_worker, c) == 0)
      ++started;
  build_worker(c);
  for (size_t t = 0; t < started; ++t)
    pthread_join(tid[t], NULL);
}

/* Stores a kernel that built; a failure is only a warning. */
static void store(ctx_t *c, job_t *j) {
  if (!c->o->cache || !j->res->cache_digest[0])
    return;
  lf_cache_entry_t e = {0};
  e.kernel = j->res->kernel;
  e.ptx = j->built.ptx;
  e.cubin = j->built.cubin;
  e.cubin_len = j->built.cubin ? j->built.cubin_len : 0;
  e.verdict = LF_CACHE_UNVERIFIED;
  e.verification_json = j->built.record_json;
  e.provenance.provider = j->res->provider;
  e.provenance.model = j->res->model;
  e.provenance.prompt_version = lf_prompt_set_version(c->prompts);
  e.provenance.attempts = j->attempt;
  lf_status_t s = lf_cache_store(c->o->cache, &j->key, &e, NULL);
  if (s)
    lf_log_status(LF_LOG_WARN, "acquire: cache store", s);
  else
    LF_LOG_INFO("acquire: %s: stored in the cache (%.12s)", j->task->name,
                j->res->cache_digest);
}

static void after_build(ctx_t *c, job_t *j) {
  lf_acquire_attempt_t *a = &j->res->attempts[j->res->attempt_count - 1];
  a->build_ms = j->build_ms;
  if (j->build_status) {
    a->outcome = LF_ATTEMPT_ERROR;
    a->message = shorten(lf_status_message(j->build_status));
    finish(c, j, LF_ACQUIRE_ERROR, LF_BUDGET_NONE,
           lf_status_message(j->build_status));
  } else if (j->built.ok) {
    a->outcome = LF_ATTEMPT_BUILT;
    a->message = xstrdup("");
    LF_LOG_INFO("acquire: %s: attempt %d: built in %ld ms", j->task->name,
                j->attempt, j->build_ms);
    j->res->kernel = j->kernel;
    j->res->line_offset = j->line_offset;
    j->kernel = NULL;
    store(c, j);
    finish(c, j, LF_ACQUIRE_OK, LF_BUDGET_NONE, "");
  } else {
    const char *why = j->built.repair_text && j->built.repair_text[0]
                          ? j->built.repair_text
                          : "the kernel did not build (no details)";
    a->outcome = LF_ATTEMPT_BUILD_FAILED;
    a->message = shorten(why);
    LF_LOG_INFO("acquire: %s: attempt %d: build failed in %ld ms: %s",
                j->task->name, j->attempt, j->build_ms, a->message);
    after_failure(c, j, why);
  }
  lf_status_free(j->build_status);
  j->build_status = NULL;
  free(j->built.repair_text);
  free(j->built.ptx);
  free(j->built.cubin);
  free(j->built.record_json);
  memset(&j->built, 0, sizeof(j->built));
  free(j->kernel);
  j->kernel = NULL;
  j->to_build = false;
}

/* ---- Rounds --------------------------------------------------------------*/

/* Ends every waiting task for `budget`. */
static void exhaust(ctx_t *c, lf_acquire_budget_t budget) {
  for (size_t i = 0; i < c->count; ++i)
    if (c->jobs[i].pending)
      finish(c, &c->jobs[i], LF_ACQUIRE_BUDGET, budget,
             budget == LF_BUDGET_WALL       ? "the wall-time budget ran out"
             : budget == LF_BUDGET_REQUESTS ? "the request budget ran out"
                                            : "the token budget ran out");
}

static lf_status_t run_rounds(ctx_t *c) {
  const lf_acquire_options_t *o = c->o;
  job_t **round = calloc(c->count ? c->count : 1, sizeof(*round));
  c->build_list = calloc(c->count ? c->count : 1, sizeof(*c->build_list));
  if (!round || !c->build_list) {
    free(round);
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (;;) {
    if (o->max_wall_ms && now_ms() >= c->deadline_ms)
      exhaust(c, LF_BUDGET_WALL);
    size_t n = 0;
    for (size_t i = 0; i < c->count; ++i) {
      job_t *j = &c->jobs[i];
      if (!j->pending)
        continue;
      long tokens = c->report->prompt_tokens + c->report->completion_tokens;
      if (o->max_requests && c->report->requests + (long)n >= o->max_requests)
        finish(c, j, LF_ACQUIRE_BUDGET, LF_BUDGET_REQUESTS,
               "the request budget ran out");
      else if (o->max_tokens && tokens >= o->max_tokens)
        finish(c, j, LF_ACQUIRE_BUDGET, LF_BUDGET_TOKENS,
               "the token budget ran out");
      else
        round[n++] = j;
    }
    if (n == 0)
      break;
    ++c->report->rounds;
    size_t ready = 0;
    for (size_t i = 0; i < n; ++i) {
      job_t *j = round[i];
      ++j->attempt;
      lf_status_t s = make_messages(c, j);
      if (s) {
        finish(c, j, LF_ACQUIRE_ERROR, LF_BUDGET_NONE, lf_status_message(s));
        lf_status_free(s);
        continue;
      }
      LF_LOG_INFO("acquire: %s: asking %s (%s, attempt %d/%d, %s)",
                  j->task->name, lf_acquire_provider_name(o->provider),
                  o->model, j->attempt, o->max_attempts,
                  j->attempt > 1 ? "repair" : "first");
      round[ready++] = j;
    }
    int64_t t0 = now_ms();
    if (o->provider == LF_PROVIDER_OPENAI) {
      lf_status_t s = ask_openai(c, round, ready);
      if (s) {
        free(round);
        return s;
      }
    } else {
      ask_replay(c, round, ready);
    }
    LF_LOG_INFO("acquire: round %d: %zu request(s) in %ld ms",
                c->report->rounds, ready, (long)(now_ms() - t0));
    c->build_count = 0;
    for (size_t i = 0; i < ready; ++i)
      if (round[i]->to_build)
        c->build_list[c->build_count++] = round[i];
    run_builds(c);
    for (size_t i = 0; i < c->build_count; ++i)
      after_build(c, c->build_list[i]);
  }
  free(round);
  return LF_OK;
}

/* ---- The call ------------------------------------------------------------*/

static void result_init(lf_acquire_result_t *r) {
  memset(r, 0, sizeof(*r));
  r->message = xstrdup("");
  r->provider = xstrdup("");
  r->model = xstrdup("");
}

lf_status_t lf_acquire_run(const lf_acquire_task_t *tasks, size_t count,
                           const lf_acquire_options_t *o,
                           lf_acquire_report_t **out_report) {
  *out_report = NULL;
  LF_RETURN_IF_ERROR(check_inputs(tasks, count, o));
  ctx_t c = {.o = o, .count = count, .start_ms = now_ms()};
  c.deadline_ms = c.start_ms + o->max_wall_ms;
  pthread_mutex_init(&c.lock, NULL);
  lf_status_t s = LF_OK;
  c.report = calloc(1, sizeof(*c.report));
  c.jobs = calloc(count ? count : 1, sizeof(*c.jobs));
  if (c.report)
    c.report->results = calloc(count ? count : 1, sizeof(*c.report->results));
  if (!c.report || !c.jobs || !c.report->results) {
    s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out_free;
  }
  c.report->count = count;
  for (size_t i = 0; i < count; ++i)
    result_init(&c.report->results[i]);

  if (o->provider != LF_PROVIDER_NONE) {
    s = lf_prompt_set_load(o->prompts_dir, &c.prompts);
    if (s)
      goto out_free;
    snprintf(c.report->prompt_version, sizeof(c.report->prompt_version), "%s",
             lf_prompt_set_version(c.prompts));
    lf_strbuf_t b;
    lf_strbuf_init(&b, 65536);
    s = lf_prompt_system(c.prompts, &b);
    c.system = s ? NULL : lf_strbuf_take(&b);
    lf_strbuf_free(&b);
    if (s)
      goto out_free;
  }
  if (o->provider == LF_PROVIDER_REPLAY) {
    lf_strbuf_t d;
    lf_strbuf_init(&d, 8192);
    s = o->replay_dir ? lf_strbuf_append_str(&d, o->replay_dir)
                      : lf_replay_default_dir(&d);
    c.replay_dir = s ? NULL : lf_strbuf_take(&d);
    lf_strbuf_free(&d);
    if (s)
      goto out_free;
  }
  const char *env =
      o->client.api_key_env ? o->client.api_key_env : "OPENAI_API_KEY";
  const char *secret = getenv(env);
  if (secret && strlen(secret) >= SECRET_MIN)
    c.secret = strdup(secret);

  size_t waiting = 0;
  for (size_t i = 0; i < count; ++i) {
    job_t *j = &c.jobs[i];
    j->task = &tasks[i];
    j->res = &c.report->results[i];
    j->subject = (lf_prompt_subject_t){
        tasks[i].name,      tasks[i].fingerprint, tasks[i].klass, tasks[i].ir,
        tasks[i].signature, tasks[i].arch,        o->gpu};
    j->key = (lf_cache_key_t){tasks[i].fingerprint,
                              tasks[i].arch,
                              o->toolchain,
                              lf_acquire_provider_name(o->provider),
                              o->model,
                              c.report->prompt_version};
    if (o->provider == LF_PROVIDER_NONE) {
      finish(&c, j, LF_ACQUIRE_SKIPPED, LF_BUDGET_NONE,
             "provider none: nothing asked");
      continue;
    }
    if (try_cache(&c, j))
      continue;
    if (o->provider == LF_PROVIDER_OPENAI && o->offline) {
      finish(&c, j, LF_ACQUIRE_UNAVAILABLE, LF_BUDGET_NONE,
             "offline: not in the cache, and provider openai needs the "
             "network (use provider=replay or drop offline)");
      continue;
    }
    j->pending = true;
    ++waiting;
  }

  if (waiting && o->provider == LF_PROVIDER_OPENAI) {
    lf_llm_client_options_t co = o->client;
    co.model = o->model;
    co.max_concurrency = o->max_concurrency;
    lf_status_t cs = lf_llm_client_create(&co, &c.client);
    if (cs) {
      for (size_t i = 0; i < count; ++i)
        if (c.jobs[i].pending)
          finish(&c, &c.jobs[i], LF_ACQUIRE_UNAVAILABLE, LF_BUDGET_NONE,
                 lf_status_message(cs));
      lf_status_free(cs);
      waiting = 0;
    } else {
      LF_LOG_INFO("acquire: %zu subgraph(s) to ask at %s (model %s, at most "
                  "%d in flight)",
                  waiting, lf_llm_client_endpoint(c.client), o->model,
                  o->max_concurrency);
    }
  }
  if (waiting)
    s = run_rounds(&c);
  if (s)
    goto out_free;
  c.report->wall_ms = (long)(now_ms() - c.start_ms);
  size_t by[8] = {0};
  for (size_t i = 0; i < count; ++i)
    ++by[c.report->results[i].outcome & 7];
  LF_LOG_INFO("acquire: %zu subgraph(s) in %ld ms: %zu ok, %zu cached, %zu "
              "failed, %zu budget-exhausted%s%s%s, %zu unavailable, %zu "
              "skipped; %ld request(s) in %d round(s), %ld tokens",
              count, c.report->wall_ms, by[LF_ACQUIRE_OK],
              by[LF_ACQUIRE_CACHED] + by[LF_ACQUIRE_CACHED_REJECTED],
              by[LF_ACQUIRE_FAILED] + by[LF_ACQUIRE_ERROR],
              by[LF_ACQUIRE_BUDGET], c.report->exhausted ? " (" : "",
              lf_acquire_budget_name(c.report->exhausted),
              c.report->exhausted ? ")" : "", by[LF_ACQUIRE_UNAVAILABLE],
              by[LF_ACQUIRE_SKIPPED], c.report->requests, c.report->rounds,
              c.report->prompt_tokens + c.report->completion_tokens);
  *out_report = c.report;
  c.report = NULL;

out_free:
  for (size_t i = 0; c.jobs && i < count; ++i) {
    job_t *j = &c.jobs[i];
    free(j->first), free(j->last_reply), free(j->last_error);
    free(j->repair), free(j->kernel);
  }
  free(c.jobs);
  free(c.build_list);
  lf_acquire_report_destroy(c.report);
  lf_llm_client_destroy(c.client);
  lf_prompt_set_destroy(c.prompts);
  free(c.system);
  free(c.replay_dir);
  if (c.secret) {
    memset(c.secret, 0, strlen(c.secret));
    free(c.secret);
  }
  pthread_mutex_destroy(&c.lock);
  return s;
}

void lf_acquire_report_destroy(lf_acquire_report_t *report) {
  if (!report)
    return;
  for (size_t i = 0; report->results && i < report->count; ++i) {
    lf_acquire_result_t *r = &report->results[i];
    free(r->message), free(r->kernel), free(r->provider), free(r->model);
    lf_cache_entry_free(r->cache_entry);
    for (size_t k = 0; k < r->attempt_count; ++k)
      free(r->attempts[k].message);
    free(r->attempts);
  }
  free(report->results);
  free(report);
}

lf_status_t lf_acquire_report_to_json(const lf_acquire_report_t *report,
                                      const lf_acquire_task_t *tasks,
                                      bool with_kernels, char **out_json) {
  *out_json = NULL;
  cJSON *root = cJSON_CreateObject();
  cJSON *list = NULL;
  bool ok = root != NULL;
  ok = ok && cJSON_AddStringToObject(root, "schema", "llm-fuse-acquire/1");
  ok = ok &&
       cJSON_AddStringToObject(root, "prompt_version", report->prompt_version);
  ok = ok && cJSON_AddStringToObject(root, "exhausted",
                                     lf_acquire_budget_name(report->exhausted));
  ok =
      ok && cJSON_AddNumberToObject(root, "requests", (double)report->requests);
  ok = ok && cJSON_AddNumberToObject(root, "rounds", report->rounds);
  ok = ok && cJSON_AddNumberToObject(root, "prompt_tokens",
                                     (double)report->prompt_tokens);
  ok = ok && cJSON_AddNumberToObject(root, "completion_tokens",
                                     (double)report->completion_tokens);
  ok = ok && cJSON_AddNumberToObject(root, "wall_ms", (double)report->wall_ms);
  ok = ok && (list = cJSON_AddArrayToObject(root, "subgraphs"));
  for (size_t i = 0; ok && i < report->count; ++i) {
    const lf_acquire_result_t *r = &report->results[i];
    cJSON *g = cJSON_CreateObject(), *atts = NULL;
    ok = g && cJSON_AddItemToArray(list, g);
    ok = ok && cJSON_AddStringToObject(g, "name", tasks[i].name);
    ok = ok && cJSON_AddStringToObject(g, "fingerprint", tasks[i].fingerprint);
    ok = ok && cJSON_AddStringToObject(g, "arch", tasks[i].arch);
    ok = ok && cJSON_AddStringToObject(g, "outcome",
                                       lf_acquire_outcome_name(r->outcome));
    ok = ok && cJSON_AddStringToObject(g, "budget",
                                       lf_acquire_budget_name(r->budget));
    ok = ok &&
         cJSON_AddStringToObject(g, "message", r->message ? r->message : "");
    ok = ok && cJSON_AddStringToObject(g, "provider", r->provider);
    ok = ok && cJSON_AddStringToObject(g, "model", r->model);
    ok = ok && cJSON_AddStringToObject(g, "cache_digest", r->cache_digest);
    if (ok && r->cache_entry)
      ok = cJSON_AddStringToObject(
          g, "cache_verdict", lf_cache_verdict_name(r->cache_entry->verdict));
    ok = ok && cJSON_AddNumberToObject(g, "elapsed_ms", (double)r->elapsed_ms);
    ok = ok && (atts = cJSON_AddArrayToObject(g, "attempts"));
    for (size_t k = 0; ok && k < r->attempt_count; ++k) {
      const lf_acquire_attempt_t *a = &r->attempts[k];
      cJSON *x = cJSON_CreateObject();
      ok = x && cJSON_AddItemToArray(atts, x);
      ok = ok &&
           cJSON_AddStringToObject(x, "kind", a->repair ? "repair" : "first");
      ok = ok && cJSON_AddStringToObject(
                     x, "outcome", lf_acquire_attempt_outcome_name(a->outcome));
      ok =
          ok && cJSON_AddNumberToObject(x, "latency_ms", (double)a->latency_ms);
      ok = ok && cJSON_AddNumberToObject(x, "build_ms", (double)a->build_ms);
      ok = ok && cJSON_AddNumberToObject(x, "prompt_tokens",
                                         (double)a->prompt_tokens);
      ok = ok && cJSON_AddNumberToObject(x, "completion_tokens",
                                         (double)a->completion_tokens);
      ok = ok &&
           cJSON_AddBoolToObject(x, "tokens_estimated", a->tokens_estimated);
      ok = ok && cJSON_AddNumberToObject(x, "http_attempts", a->http_attempts);
      ok = ok && cJSON_AddNumberToObject(x, "http_code", (double)a->http_code);
      ok = ok &&
           cJSON_AddStringToObject(x, "message", a->message ? a->message : "");
    }
    if (ok && with_kernels && r->kernel)
      ok = cJSON_AddStringToObject(g, "kernel", r->kernel);
  }
  if (ok)
    *out_json = cJSON_Print(root);
  cJSON_Delete(root);
  return *out_json ? LF_OK
                   : LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED,
                               "out of memory writing the acquire report");
}
