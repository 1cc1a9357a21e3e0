/* acquire.c - the acquire loop: cache, provider rounds, builds, repairs,
 * budgets (acquire.h).
 *
 * One call runs one loop per subgraph on up to max_concurrency threads
 * (each with its own HTTP client): request, extract, expand variants,
 * build (at most build_concurrency at once across threads), evaluate, then
 * repair, refine or end. The budgets are checked, under one lock, before
 * every request.
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
#include "llm_client/table.h"
#include "llm_client/reply.h"
#include "llm_client/tune.h"

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
                                      "error",
                                      "rejected"};
  return (unsigned)o < sizeof(names) / sizeof(names[0]) ? names[o] : "?";
}

const char *lf_acquire_budget_name(lf_acquire_budget_t b) {
  static const char *const names[] = {"", "requests", "tokens", "wall"};
  return (unsigned)b < 4 ? names[b] : "?";
}

const char *lf_acquire_attempt_outcome_name(lf_acquire_attempt_outcome_t o) {
  static const char *const names[] = {
      "built", "build-failed", "no-kernel", "provider-error", "budget",
      "error", "verified",     "rejected",  "unjudged"};
  return (unsigned)o < sizeof(names) / sizeof(names[0]) ? names[o] : "?";
}

const char *lf_acquire_request_kind_name(lf_acquire_request_kind_t k) {
  static const char *const names[] = {"first", "repair", "refine"};
  return (unsigned)k < 3 ? names[k] : "?";
}

const char *lf_acquire_attempt_stage(const lf_acquire_attempt_t *a) {
  switch (a->outcome) {
  case LF_ATTEMPT_NO_KERNEL:
  case LF_ATTEMPT_PROVIDER_ERROR:
  case LF_ATTEMPT_BUDGET:
    return "request";
  case LF_ATTEMPT_BUILD_FAILED:
    return "build";
  case LF_ATTEMPT_REJECTED:
  case LF_ATTEMPT_UNJUDGED:
    return "verify";
  case LF_ATTEMPT_VERIFIED:
    return a->kind == LF_REQUEST_REFINE ? "refine" : "time";
  case LF_ATTEMPT_ERROR:
    return a->verify_ms ? "verify" : "build";
  case LF_ATTEMPT_BUILT:
    return "";
  }
  return "";
}

void lf_acquire_options_init(lf_acquire_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->provider = LF_PROVIDER_REPLAY;
  lf_llm_client_options_init(&o->client);
  o->model = "gpt-4o";
  o->max_attempts = 4;
  o->max_concurrency = 8;
  o->build_concurrency = 1;
  o->max_refinements = 2;
  o->stop_fraction = 0.9;
}

/* ---- State ---------------------------------------------------------------*/

/* A candidate the loop holds on to: its text, build artifact and
 * evaluation; `kernel` is NULL when there is none. */
typedef struct kept_s {
  char *kernel;
  size_t line_offset;
  size_t attempt; /* 1 + index of its attempt */
  void *artifact;
  lf_acquire_eval_t eval;
  char *provider, *model; /* who answered its request */
} kept_t;

/* One subgraph's loop. Touched only by the loop thread that runs it (and by
 * the set-up before the threads start). */
typedef struct job_s {
  const lf_acquire_task_t *task;
  lf_acquire_result_t *res;
  lf_prompt_subject_t subject;
  lf_cache_key_t key;
  bool pending;                   /* waits for its loop */
  lf_acquire_request_kind_t kind; /* of the next request */
  char *first;                    /* the first request's user message */
  char *last_reply;               /* the previous reply (redacted, cut) */
  char *followup; /* this request's last user message (repair/refine) */
  char *feedback; /* the error the next request reports, or NULL */
  size_t feedback_attempt;  /* 1 + index of the attempt it came from */
  double last_ms;           /* the previous reply's fastest verified time */
  lf_llm_message_t msgs[4]; /* borrowed from the strings above */
  size_t msg_count;
  kept_t best; /* the fastest verified candidate */
  kept_t rej;  /* the last rejected one, for LF_ACQUIRE_REJECTED */
  /* Adapt requests (openai): the table entry that answered request 1, and
   * what the first model request is, once it is an adapt request. */
  char table_id[96]; /* "" when the table did not answer */
  char *adapt;       /* "adapt from <id> (...)"; NULL: a blank request */
  char replay_prompt[48]; /* the replay key's prompt version (tf32: the
                             major with "tf32" appended) */
  bool synth_answered; /* request 1 was the synthesized kernel */
  /* Next entries: the table's kernel failed, so the next entry that
   * admits the sizes answers the next request (lf_table_instantiate_nth). */
  bool table_answered;          /* the last request was the table's */
  size_t table_tries;           /* table entries that answered a request */
  int table_extra;              /* of which after the first (not in
                                   max_attempts) */
  lf_table_match_t table_next;  /* the pending next entry; text NULL: none */
  char *table_failure;          /* the first entry's failure (adapt) */
  size_t table_failure_attempt; /* 1 + index of its attempt */
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
  lf_llm_client_t **clients; /* openai: one per loop thread */
  size_t threads;
  int64_t start_ms, deadline_ms;
  /* Shared by the loop threads: report totals, budgets, the job queue,
   * the build slots. */
  pthread_mutex_t lock;
  pthread_cond_t build_free;
  int builds_running;
  size_t next_job;
} ctx_t;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *xstrdup(const char *s) { return strdup(s ? s : ""); }

/* Whether the task is in TF32 mode (lf_acquire_task_t.precision). */
static bool is_tf32(const lf_acquire_task_t *t) {
  return t->precision && strcmp(t->precision, "tf32") == 0;
}

/* With openai, a TF32 task's first request (blank or adapt) ends with one
 * line saying that TF32 is allowed; `first` is the request text (heap),
 * returned (reallocated) with the line. Other tasks and providers: as is. */
static char *tf32_line(const ctx_t *c, const job_t *j, char *first);

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

static lf_acquire_attempt_t *new_attempt(job_t *j, const char *variant) {
  lf_acquire_result_t *r = j->res;
  lf_acquire_attempt_t *a =
      realloc(r->attempts, (r->attempt_count + 1) * sizeof(*a));
  if (!a)
    return NULL;
  r->attempts = a;
  a = &r->attempts[r->attempt_count++];
  memset(a, 0, sizeof(*a));
  a->kind = j->kind;
  a->repair = j->kind != LF_REQUEST_FIRST;
  a->request = r->requests;
  a->variant = xstrdup(variant);
  a->verify_reason = xstrdup("");
  a->feedback = xstrdup("");
  a->provider = xstrdup(r->provider);
  a->model = xstrdup(r->model);
  return a;
}

void lf_acquire_eval_clear(lf_acquire_eval_t *e) {
  if (!e)
    return;
  free(e->reason), free(e->feedback), free(e->roofline_basis);
  free(e->verdict_json);
  memset(e, 0, sizeof(*e));
}

double lf_acquire_eval_fraction(const lf_acquire_eval_t *e) {
  return e && e->time_ms > 0 && e->roofline_ms > 0 ? e->roofline_ms / e->time_ms
                                                   : 0;
}

static void release(ctx_t *c, void **artifact) {
  if (*artifact && c->o->release)
    c->o->release(*artifact, c->o->release_user);
  *artifact = NULL;
}

/* Records the first budget that ran out in the report. */
static void note_exhausted(ctx_t *c, lf_acquire_budget_t budget) {
  if (budget == LF_BUDGET_NONE)
    return;
  pthread_mutex_lock(&c->lock);
  if (c->report->exhausted == LF_BUDGET_NONE)
    c->report->exhausted = budget;
  pthread_mutex_unlock(&c->lock);
}

/* Frees what `k` holds (its artifact through the release callback). */
static void kept_clear(ctx_t *c, kept_t *k) {
  free(k->kernel);
  free(k->provider);
  free(k->model);
  release(c, &k->artifact);
  lf_acquire_eval_clear(&k->eval);
  memset(k, 0, sizeof(*k));
}

/* `k` becomes this candidate of `r`'s current answerer (taking over
 * `artifact` and `eval`). */
static void kept_set(ctx_t *c, kept_t *k, const lf_acquire_result_t *r,
                     const char *text, size_t line_offset, size_t attempt,
                     void *artifact, lf_acquire_eval_t *eval) {
  kept_clear(c, k);
  k->kernel = xstrdup(text);
  k->provider = xstrdup(r->provider);
  k->model = xstrdup(r->model);
  k->line_offset = line_offset;
  k->attempt = attempt;
  k->artifact = artifact;
  k->eval = *eval;
  memset(eval, 0, sizeof(*eval));
}

/* Hands `k` over to the task's result: its kernel, artifact, evaluation and
 * who answered it (a later request's answerer may have failed), and marks
 * its attempt as the kept one. */
static void kept_to_result(kept_t *k, lf_acquire_result_t *r) {
  if (k->provider && k->model) {
    free(r->provider);
    free(r->model);
    r->provider = k->provider;
    r->model = k->model;
  } else {
    free(k->provider);
    free(k->model);
  }
  r->kernel = k->kernel;
  r->line_offset = k->line_offset;
  r->artifact = k->artifact;
  r->eval = k->eval;
  r->evaluated = true;
  if (k->attempt && k->attempt <= r->attempt_count)
    r->attempts[k->attempt - 1].kept = true;
  memset(k, 0, sizeof(*k));
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
  note_exhausted(c, budget);
  if (outcome == LF_ACQUIRE_OK || outcome == LF_ACQUIRE_CACHED)
    LF_LOG_INFO("acquire: %s: %s after %zu attempt(s), %ld ms%s%s",
                j->task->name, lf_acquire_outcome_name(outcome),
                j->res->attempt_count, j->res->elapsed_ms,
                message && message[0] ? ": " : "", message ? message : "");
  else
    LF_LOG_INFO("acquire: %s: %s%s%s after %zu attempt(s): %s", j->task->name,
                lf_acquire_outcome_name(outcome), budget ? " (" : "",
                budget ? lf_acquire_budget_name(budget) : "",
                j->res->attempt_count, j->res->message ? j->res->message : "");
  if (budget && outcome != LF_ACQUIRE_OK)
    LF_LOG_INFO("acquire: %s: the %s budget ran out; it keeps its original ops",
                j->task->name, lf_acquire_budget_name(budget));
}

/* Ends a task with its fastest verified kernel. */
static void finish_best(ctx_t *c, job_t *j, lf_acquire_budget_t budget,
                        const char *why) {
  lf_acquire_result_t *r = j->res;
  kept_to_result(&j->best, r);
  char msg[256];
  double f = lf_acquire_eval_fraction(&r->eval);
  snprintf(msg, sizeof(msg), "%s; kept %.4g ms", why, r->eval.time_ms);
  if (f > 0)
    snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
             " (%.0f%% of the roofline)", 100 * f);
  /* A budget that ran out during refinement is noted, not a failure. */
  finish(c, j, LF_ACQUIRE_OK, LF_BUDGET_NONE, msg);
  note_exhausted(c, budget);
}

/* Ends a task whose every candidate was rejected: the last one is kept in
 * the result so the caller can record the verdict. */
static void finish_rejected(ctx_t *c, job_t *j, const char *why) {
  kept_to_result(&j->rej, j->res);
  finish(c, j, LF_ACQUIRE_REJECTED, LF_BUDGET_NONE, why);
}

/* Ends a task that stops for `budget` or a provider failure: with the best
 * kernel when there is one, the last rejection, or `outcome`. */
static void finish_stopped(ctx_t *c, job_t *j, lf_acquire_outcome_t outcome,
                           lf_acquire_budget_t budget, const char *why) {
  if (j->best.kernel)
    finish_best(c, j, budget, why);
  else if (j->rej.kernel && budget == LF_BUDGET_NONE)
    finish_rejected(c, j, why);
  else
    finish(c, j, outcome, budget, why);
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
  if (o->max_refinements < 0 || o->max_refinements > 32)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "max-refinements %d out of 0..32", o->max_refinements);
  if (!(o->stop_fraction > 0) || o->stop_fraction > 10)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "stop fraction %g out of (0, 10]", o->stop_fraction);
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
    if (t->precision && *t->precision &&
        (strcmp(t->precision, "tf32") != 0 || t->tf32_k < 1))
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "task %zu (%.40s): precision '%.16s' is not tf32 with "
                       "a reduction length tf32_k >= 1",
                       i, t->name, t->precision);
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

/* Requests made to get a kernel right: the first plus repairs (the table's
 * next entries are not counted: max_attempts bounds the model's). */
static int fix_requests(const job_t *j) {
  return j->res->requests - j->res->refinements - j->table_extra;
}

/* Counts a request against the budgets, or says which one forbids it. */
static lf_acquire_budget_t admit(ctx_t *c) {
  const lf_acquire_options_t *o = c->o;
  lf_acquire_budget_t b = LF_BUDGET_NONE;
  pthread_mutex_lock(&c->lock);
  long tokens = c->report->prompt_tokens + c->report->completion_tokens;
  if (o->max_wall_ms && now_ms() >= c->deadline_ms)
    b = LF_BUDGET_WALL;
  else if (o->max_requests && c->report->requests >= o->max_requests)
    b = LF_BUDGET_REQUESTS;
  else if (o->max_tokens && tokens >= o->max_tokens)
    b = LF_BUDGET_TOKENS;
  else
    ++c->report->requests;
  pthread_mutex_unlock(&c->lock);
  return b;
}

static const char *budget_sentence(lf_acquire_budget_t b) {
  return b == LF_BUDGET_WALL       ? "the wall-time budget ran out"
         : b == LF_BUDGET_REQUESTS ? "the request budget ran out"
                                   : "the token budget ran out";
}

/* Builds this request's conversation for `j`. */
static lf_status_t make_messages(ctx_t *c, job_t *j) {
  lf_status_t s = LF_OK;
  if (!j->first) {
    lf_strbuf_t b;
    lf_strbuf_init(&b, (size_t)1 << 20);
    /* The examples come from the pattern table only when the prompt goes
     * to a model: with replay the prompt is rendered only for its token
     * estimate and strict matching, which stay those of the recordings. */
    s = lf_prompt_first(
        c->prompts, c->o->provider == LF_PROVIDER_OPENAI ? c->o->table : NULL,
        &j->subject, &b);
    j->first = s ? NULL : tf32_line(c, j, lf_strbuf_take(&b));
    lf_strbuf_free(&b);
    if (s)
      return s;
  }
  j->msgs[0] = (lf_llm_message_t){"system", c->system};
  j->msgs[1] = (lf_llm_message_t){"user", j->first};
  j->msg_count = 2;
  if (j->kind == LF_REQUEST_FIRST)
    return LF_OK;
  lf_strbuf_t prev, next;
  lf_strbuf_init(&prev, LF_PROMPT_MAX_PREVIOUS + 256);
  lf_strbuf_init(&next, 16384);
  s = lf_prompt_previous(j->last_reply, &prev);
  if (!s && j->kind == LF_REQUEST_REPAIR) {
    s = lf_prompt_repair(c->prompts, &j->subject, fix_requests(j) - 1,
                         c->o->max_attempts, j->feedback, &next);
  } else if (!s) {
    lf_prompt_refine_t rf = {
        .round = j->res->refinements,
        .max_rounds = c->o->max_refinements,
        .best_ms = j->best.eval.time_ms,
        .last_ms = j->feedback ? 0 : j->last_ms,
        .fallback_ms = j->best.eval.fallback_ms,
        .roofline_ms = j->best.eval.roofline_ms,
        .roofline_basis = j->best.eval.roofline_basis,
        .error = j->feedback,
    };
    s = lf_prompt_refine(c->prompts, &j->subject, &rf, &next);
  }
  if (!s) {
    free(j->last_reply);
    j->last_reply = lf_strbuf_take(&prev);
    free(j->followup);
    j->followup = lf_strbuf_take(&next);
    j->msgs[2] = (lf_llm_message_t){"assistant", j->last_reply};
    j->msgs[3] = (lf_llm_message_t){"user", j->followup};
    j->msg_count = 4;
    /* The feedback goes out now: note it on the attempt it came from. */
    lf_acquire_result_t *r = j->res;
    if (j->feedback_attempt && j->feedback_attempt <= r->attempt_count) {
      lf_acquire_attempt_t *from = &r->attempts[j->feedback_attempt - 1];
      free(from->feedback);
      from->feedback = xstrdup(j->followup);
    }
  }
  lf_strbuf_free(&prev);
  lf_strbuf_free(&next);
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
  pthread_mutex_lock(&c->lock);
  c->report->prompt_tokens += a->prompt_tokens;
  c->report->completion_tokens += a->completion_tokens;
  pthread_mutex_unlock(&c->lock);
}

/* Writes the exchange to record_dir (openai); a failure is a warning. */
static void record(ctx_t *c, job_t *j, const lf_acquire_attempt_t *a,
                   const char *reply) {
  if (!c->o->record_dir)
    return;
  lf_replay_key_t key = {j->task->fingerprint, j->task->arch, j->replay_prompt,
                         j->res->requests};
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

static char *tf32_line(const ctx_t *c, const job_t *j, char *first) {
  if (!first || c->o->provider != LF_PROVIDER_OPENAI || !is_tf32(j->task))
    return first;
  char line[512];
  int n = snprintf(line, sizeof(line),
                   "\n\nPrecision: TF32 is allowed for this subgraph (pass "
                   "option tf32=1, as PyTorch's allow_tf32): its f32 "
                   "contractions may run on the TF32 tensor cores (operands "
                   "rounded to TF32 with cvt.rna.tf32.f32, f32 accumulation; "
                   "mma.sync m16n8k8 .tf32 or wgmma .tf32); the outputs are "
                   "verified with the TF32 tolerance for K = %lld.\n",
                   (long long)j->task->tf32_k);
  size_t len = strlen(first);
  char *out = realloc(first, len + (size_t)n + 1);
  if (!out)
    return first;
  memcpy(out + len, line, (size_t)n + 1);
  return out;
}

/* Whether the pattern table answers this request: the first one of a
 * subgraph with a pattern key. */
static bool table_asked(const ctx_t *c, const job_t *j) {
  return c->o->table && j->kind == LF_REQUEST_FIRST &&
         j->res->requests == 1 && j->task->pattern;
}

/* The table entry `m` (cleared here) as the answer to this request: a
 * reply (heap). */
static char *table_answer(job_t *j, lf_table_match_t *m) {
  free(j->res->provider);
  free(j->res->model);
  j->res->provider = xstrdup("table");
  j->res->model = xstrdup(m->id);
  j->table_answered = true;
  ++j->table_tries;
  if (m->rank <= 1)
    LF_LOG_INFO("acquire: %s: request %d: pattern table: template %s (%s%s)",
                j->task->name, j->res->requests, m->id, m->source,
                m->precision[0] ? "; precision tf32" : "");
  else
    LF_LOG_INFO("acquire: %s: request %d: pattern table: next entry %s (%s%s; "
                "entry %zu of at most %d)",
                j->task->name, j->res->requests, m->id, m->source,
                m->precision[0] ? "; precision tf32" : "", j->table_tries,
                LF_ACQUIRE_TABLE_TRIES);
  size_t n = strlen(m->text) + 64;
  char *reply = malloc(n);
  if (reply)
    snprintf(reply, n, "```mlir\n%s\n```\n", m->text);
  lf_table_match_clear(m);
  return reply ? reply : xstrdup("");
}

/* The table's template for the task, instantiated, as a reply (heap); NULL
 * with *why when the table has none for these sizes. */
static char *table_reply(ctx_t *c, job_t *j, lf_status_t *why) {
  lf_table_match_t m;
  lf_status_t ts = lf_table_instantiate_nth(
      c->o->table, j->task->pattern, j->task->arch, j->task->precision,
      j->task->pattern_sizes, j->task->num_pattern_sizes, 0, &m);
  if (ts) {
    LF_LOG_INFO("acquire: %s: pattern table: %s", j->task->name,
                lf_status_message(ts));
    *why = ts;
    return NULL;
  }
  return table_answer(j, &m);
}

/* How the request that the table answered failed, in words, for the log:
 * "failed verification (mismatch)", "did not build", "failed". */
static void table_failure_words(const job_t *j, char *out, size_t size) {
  const lf_acquire_result_t *r = j->res;
  const char *reason = NULL;
  bool built_none = false;
  for (size_t k = 0; k < r->attempt_count; ++k) {
    const lf_acquire_attempt_t *a = &r->attempts[k];
    if (a->request != r->requests)
      continue;
    if (a->outcome == LF_ATTEMPT_REJECTED && !reason)
      reason = a->verify_reason && a->verify_reason[0] ? a->verify_reason
                                                       : "rejected";
    built_none |= a->outcome == LF_ATTEMPT_BUILD_FAILED;
  }
  if (reason)
    snprintf(out, size, "failed verification (%s)", reason);
  else
    snprintf(out, size, "%s", built_none ? "did not build" : "failed");
}

/* After a request that the table answered gave no verified kernel (no
 * variant built, or none verified; `why` is the first failure, from
 * attempt `from_attempt`): the next entry that admits the sizes is made
 * ready for the next request. False when there is none, or
 * LF_ACQUIRE_TABLE_TRIES entries have been tried: today's course follows. */
static bool table_next(ctx_t *c, job_t *j, const char *why,
                       size_t from_attempt) {
  if (!j->table_answered)
    return false;
  j->table_answered = false;
  const lf_acquire_task_t *t = j->task;
  char words[160];
  table_failure_words(j, words, sizeof(words));
  char *short_why = shorten(why);
  if (!j->table_failure) {
    j->table_failure = xstrdup(why);
    j->table_failure_attempt = from_attempt;
  }
  lf_table_match_t m;
  lf_status_t s =
      j->table_tries >= LF_ACQUIRE_TABLE_TRIES
          ? LF_STATUS(LF_STATUS_OUT_OF_RANGE,
                      "no further entry is tried (at most %d per subgraph)",
                      LF_ACQUIRE_TABLE_TRIES)
          : lf_table_instantiate_nth(c->o->table, t->pattern, t->arch,
                                     t->precision, t->pattern_sizes,
                                     t->num_pattern_sizes, j->table_tries, &m);
  if (s) {
    LF_LOG_INFO("acquire: %s: request %d: pattern table: template %s %s: "
                "%s; %s",
                t->name, j->res->requests, j->res->model, words,
                short_why ? short_why : "", lf_status_message(s));
    lf_status_free(s);
    free(short_why);
    return false;
  }
  LF_LOG_INFO("acquire: %s: request %d: pattern table: template %s %s: %s; "
              "the next entry that admits these sizes answers request %d",
              t->name, j->res->requests, j->res->model, words,
              short_why ? short_why : "", j->res->requests + 1);
  free(short_why);
  lf_table_match_clear(&j->table_next);
  j->table_next = m;
  j->kind = LF_REQUEST_FIRST;
  ++j->table_extra;
  /* Nothing goes to a model: the next entry is asked as it is. */
  free(j->feedback);
  j->feedback = NULL;
  j->feedback_attempt = 0;
  return true;
}

/* Whether the synthesized kernel answers this request: the first one of a
 * subgraph that has one (after the replay set and the table). */
static bool synth_asked(const job_t *j) {
  return j->task->synth_kernel && j->kind == LF_REQUEST_FIRST &&
         j->res->requests == 1;
}

/* The synthesized kernel as a reply (heap). */
static char *synth_reply(job_t *j) {
  const char *src = j->task->synth_source && j->task->synth_source[0]
                        ? j->task->synth_source
                        : "synth";
  free(j->res->provider);
  free(j->res->model);
  j->res->provider = xstrdup("synth");
  j->res->model = xstrdup(src);
  j->synth_answered = true;
  LF_LOG_INFO("acquire: %s: request 1: synthesized kernel (%s)",
              j->task->name, src);
  size_t n = strlen(j->task->synth_kernel) + 64;
  char *reply = malloc(n);
  if (reply)
    snprintf(reply, n, "```mlir\n%s\n```\n", j->task->synth_kernel);
  return reply ? reply : xstrdup("");
}

/* "S0=*, S1=4096" for `n` sizes (negative: free) into `out`. */
static void sizes_text(const int64_t *v, size_t n, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && len + 32 < size; ++i)
    len += (size_t)(v[i] < 0 ? snprintf(out + len, size - len, "%sS%zu=*",
                                        i ? ", " : "", i)
                             : snprintf(out + len, size - len, "%sS%zu=%lld",
                                        i ? ", " : "", i, (long long)v[i]));
}

/* Makes the subgraph's first model request (openai) an adapt request:
 * from the table entry `id` whose instantiation for these sizes failed to
 * build or verify with `failure`, or (id NULL) from the entry nearest these
 * sizes among those that refuse them. j->first becomes its text and
 * j->adapt says what it is. False when there is no such entry (or the
 * request cannot be made): the blank request stands. */
static bool adapt_prepare(ctx_t *c, job_t *j, const char *id,
                          const char *failure) {
  const lf_acquire_task_t *t = j->task;
  if (c->o->provider != LF_PROVIDER_OPENAI || !c->o->table || !t->pattern ||
      !t->num_pattern_sizes)
    return false;
  lf_table_nearest_t n;
  lf_status_t s = lf_table_nearest_precision(
      c->o->table, t->pattern, t->arch, t->precision, t->pattern_sizes,
      t->num_pattern_sizes, id, &n);
  if (s) {
    lf_status_free(s);
    return false;
  }
  lf_strbuf_t reason, text;
  lf_strbuf_init(&reason, (size_t)64 << 10);
  lf_strbuf_init(&text, (size_t)1 << 20);
  if (failure)
    s = lf_strbuf_appendf(&reason,
                          "Instantiated for this subgraph's sizes, it was "
                          "rejected (line numbers count the lines of a reply "
                          "that held it after one fence line):\n%s",
                          failure);
  else
    s = lf_strbuf_append_str(&reason, n.reason);
  char from[400];
  snprintf(from, sizeof(from), "pattern table entry %s (%s)", n.id, n.source);
  lf_prompt_adapt_t ad = {from, n.template_text, n.fixed, n.num_sizes,
                          lf_strbuf_cstr(&reason)};
  if (!s)
    s = lf_prompt_adapt(c->prompts, &j->subject, &ad, &text);
  bool ok = !s;
  if (ok) {
    char at[256];
    sizes_text(n.fixed, n.num_sizes, at, sizeof(at));
    char *why = shorten(failure ? failure : n.reason);
    lf_strbuf_t d;
    lf_strbuf_init(&d, 2048);
    lf_status_free(
        lf_strbuf_appendf(&d, "adapt from %s (verified at %s; %s: %s)", n.id,
                          at, failure ? "failed" : "refused", why ? why : ""));
    free(why);
    free(j->adapt);
    j->adapt = lf_strbuf_take(&d);
    lf_strbuf_free(&d);
    free(j->first);
    j->first = tf32_line(c, j, lf_strbuf_take(&text));
  } else {
    lf_log_status(LF_LOG_WARN, "acquire: adapt request", s);
    lf_status_free(s);
  }
  lf_strbuf_free(&text);
  lf_strbuf_free(&reason);
  lf_table_nearest_clear(&n);
  return ok && j->first && j->adapt;
}

/* One request to the provider. Returns the reply (heap, redacted), or NULL
 * when the task has ended (the attempt and the result say why). */
static char *ask(ctx_t *c, job_t *j, lf_llm_client_t *client,
                 lf_acquire_attempt_t *a) {
  const lf_acquire_options_t *o = c->o;
  if (j->table_next.text) {
    /* The table's previous entry failed: its next one, before anyone else
     * is asked (table_next). */
    a->latency_ms = 0;
    return table_answer(j, &j->table_next);
  }
  if (o->provider == LF_PROVIDER_OPENAI && table_asked(c, j)) {
    lf_status_t why = LF_OK;
    int64_t t0 = now_ms();
    char *reply = table_reply(c, j, &why);
    if (reply) {
      lf_status_free(why);
      snprintf(j->table_id, sizeof(j->table_id), "%s", j->res->model);
      a->latency_ms = (long)(now_ms() - t0);
      return reply;
    }
    if (synth_asked(j)) {
      /* No table kernel: the synthesized one before the model (which, if
       * it fails, starts blank or adapts the refusing entry then). */
      lf_status_free(why);
      return synth_reply(j);
    }
    /* The table's entries for this pattern refuse these sizes, or serve
     * an older arch only: the model adapts the nearest one instead of
     * starting blank. */
    if ((lf_status_code(why) == LF_STATUS_FAILED_PRECONDITION ||
         lf_status_code(why) == LF_STATUS_NOT_FOUND) &&
        adapt_prepare(c, j, NULL, NULL))
      j->msgs[1].content = j->first;
    lf_status_free(why);
  } else if (o->provider == LF_PROVIDER_OPENAI && synth_asked(j)) {
    return synth_reply(j);
  }
  if (o->provider == LF_PROVIDER_OPENAI && !j->res->first_request[0]) {
    free(j->res->first_request);
    j->res->first_request = xstrdup(j->adapt ? j->adapt : "blank");
    LF_LOG_INFO("acquire: %s: request %d: first request: %s", j->task->name,
                j->res->requests, j->res->first_request);
  }
  if (o->provider == LF_PROVIDER_OPENAI) {
    lf_llm_request_t req = {j->msgs, j->msg_count, o->model, j->task->name};
    lf_llm_result_t r;
    memset(&r, 0, sizeof(r));
    long budget = 0;
    if (o->max_wall_ms) {
      budget = (long)(c->deadline_ms - now_ms());
      if (budget < 1)
        budget = 1;
    }
    lf_status_t batch =
        lf_llm_client_run_batch_within(client, &req, 1, &r, budget);
    if (batch)
      lf_log_status(LF_LOG_WARN, "acquire: request", batch);
    a->latency_ms = r.elapsed_ms;
    a->http_attempts = r.attempts;
    a->http_code = r.http_code;
    if (r.status) {
      a->message = shorten(lf_status_message(r.status));
      bool wall = lf_status_code(r.status) == LF_STATUS_DEADLINE_EXCEEDED &&
                  strstr(lf_status_message(r.status), "time budget");
      a->outcome = wall ? LF_ATTEMPT_BUDGET : LF_ATTEMPT_PROVIDER_ERROR;
      LF_LOG_INFO("acquire: %s: request %d: no reply after %ld ms: %s",
                  j->task->name, j->res->requests, r.elapsed_ms, a->message);
      if (wall)
        finish_stopped(c, j, LF_ACQUIRE_BUDGET, LF_BUDGET_WALL,
                       "the wall-time budget ran out while the request was "
                       "pending");
      else
        finish_stopped(c, j, LF_ACQUIRE_UNAVAILABLE, LF_BUDGET_NONE,
                       lf_status_message(r.status));
      lf_llm_result_clear(&r);
      return NULL;
    }
    char *reply = redact(c, r.content);
    r.content = NULL;
    free(j->res->provider);
    free(j->res->model);
    j->res->provider = xstrdup("openai");
    j->res->model = xstrdup(o->model);
    count_tokens(c, j, a, &r.usage, reply);
    LF_LOG_INFO("acquire: %s: request %d (%s): reply in %ld ms (%ld+%ld "
                "tokens%s, finish %s)",
                j->task->name, j->res->requests,
                lf_acquire_request_kind_name(j->kind), r.elapsed_ms,
                a->prompt_tokens, a->completion_tokens,
                a->tokens_estimated ? ", estimated" : "",
                r.finish_reason ? r.finish_reason : "?");
    lf_llm_result_clear(&r);
    reply = reply ? reply : xstrdup("");
    record(c, j, a, reply);
    return reply;
  }

  int64_t t0 = now_ms();
  char want[LF_SHA256_HEX_SIZE] = "";
  lf_status_t s = LF_OK;
  if (o->replay_strict)
    s = lf_replay_request_sha256(o->model, j->msgs, j->msg_count, want);
  lf_replay_key_t key = {j->task->fingerprint, j->task->arch, j->replay_prompt,
                         j->res->requests};
  lf_replay_entry_t *e = NULL;
  if (!s)
    s = lf_replay_lookup(c->replay_dir, &key, o->replay_strict ? want : NULL,
                         &e);
  if (s && lf_status_code(s) == LF_STATUS_NOT_FOUND && table_asked(c, j)) {
    /* Not in the replay set: the pattern table's template for this math,
     * instantiated for these sizes. */
    lf_status_t ts = LF_OK;
    char *reply = table_reply(c, j, &ts);
    a->latency_ms = (long)(now_ms() - t0);
    if (reply) {
      lf_status_free(s);
      return reply;
    }
    lf_status_t both = LF_STATUS(LF_STATUS_NOT_FOUND, "%s; %s",
                                 lf_status_message(s),
                                 lf_status_message(ts));
    lf_status_free(ts);
    lf_status_free(s);
    s = both;
  }
  if (s && lf_status_code(s) == LF_STATUS_NOT_FOUND && synth_asked(j)) {
    /* Neither the replay set nor the table: the kernel the compiler wrote
     * itself for this elementwise subgraph. */
    a->latency_ms = (long)(now_ms() - t0);
    lf_status_free(s);
    return synth_reply(j);
  }
  a->latency_ms = (long)(now_ms() - t0);
  if (s) {
    a->outcome = LF_ATTEMPT_PROVIDER_ERROR;
    a->message = shorten(lf_status_message(s));
    LF_LOG_INFO("acquire: %s: request %d: replay: %s", j->task->name,
                j->res->requests, lf_status_message(s));
    if (j->kind == LF_REQUEST_REFINE && j->best.kernel &&
        lf_status_code(s) == LF_STATUS_NOT_FOUND) {
      /* The recording ends before this refinement: nothing was asked, so
       * nothing is counted, and the fastest verified kernel stands. */
      lf_acquire_result_t *r = j->res;
      lf_acquire_attempt_t *last = &r->attempts[--r->attempt_count];
      free(last->message), free(last->variant), free(last->verify_reason);
      free(last->feedback), free(last->provider), free(last->model);
      --r->requests;
      --r->refinements;
      if (j->feedback_attempt && j->feedback_attempt <= r->attempt_count) {
        lf_acquire_attempt_t *from = &r->attempts[j->feedback_attempt - 1];
        free(from->feedback);
        from->feedback = xstrdup("");
      }
      pthread_mutex_lock(&c->lock);
      --c->report->requests;
      pthread_mutex_unlock(&c->lock);
      lf_status_free(s);
      finish_best(c, j, LF_BUDGET_NONE,
                  "the replay set holds no further refinement");
      return NULL;
    }
    if (j->res->requests > 1 && lf_status_code(s) == LF_STATUS_NOT_FOUND) {
      char msg[MESSAGE_MAX * 2];
      char *last = shorten(j->feedback);
      snprintf(msg, sizeof(msg), "the replay set has no request %d%s%s",
               j->res->requests, last && last[0] ? "; last: " : "",
               last ? last : "");
      free(last);
      finish_stopped(c, j, LF_ACQUIRE_FAILED, LF_BUDGET_NONE, msg);
    } else {
      finish_stopped(c, j, LF_ACQUIRE_UNAVAILABLE, LF_BUDGET_NONE,
                     lf_status_message(s));
    }
    lf_status_free(s);
    return NULL;
  }
  free(j->res->provider);
  free(j->res->model);
  j->res->provider = xstrdup(e->provider);
  j->res->model = xstrdup(e->model);
  char *reply = redact(c, e->reply);
  e->reply = NULL;
  count_tokens(c, j, a, &e->usage, reply);
  LF_LOG_INFO("acquire: %s: request %d: replayed %s (%s/%s)", j->task->name,
              j->res->requests, e->path, e->provider, e->model);
  lf_replay_entry_free(e);
  return reply ? reply : xstrdup("");
}

/* ---- Builds and evaluations ----------------------------------------------*/

static void build_enter(ctx_t *c) {
  pthread_mutex_lock(&c->lock);
  while (c->builds_running >= c->o->build_concurrency)
    pthread_cond_wait(&c->build_free, &c->lock);
  ++c->builds_running;
  pthread_mutex_unlock(&c->lock);
}

static void build_leave(ctx_t *c) {
  pthread_mutex_lock(&c->lock);
  --c->builds_running;
  pthread_cond_signal(&c->build_free);
  pthread_mutex_unlock(&c->lock);
}

static void built_clear(lf_acquire_build_t *b) {
  free(b->repair_text);
  free(b->ptx);
  free(b->cubin);
  free(b->record_json);
  memset(b, 0, sizeof(*b));
}

/* Stores a kernel that built (no evaluation); a failure is a warning. */
static void store(ctx_t *c, job_t *j, const lf_acquire_build_t *built) {
  if (!c->o->cache || !j->res->cache_digest[0])
    return;
  lf_cache_entry_t e = {0};
  e.kernel = j->res->kernel;
  e.ptx = built->ptx;
  e.cubin = built->cubin;
  e.cubin_len = built->cubin ? built->cubin_len : 0;
  e.verdict = LF_CACHE_UNVERIFIED;
  e.verification_json = built->record_json;
  e.provenance.provider = j->res->provider;
  e.provenance.model = j->res->model;
  e.provenance.prompt_version = lf_prompt_set_version(c->prompts);
  e.provenance.attempts = j->res->requests;
  lf_status_t s = lf_cache_store(c->o->cache, &j->key, &e, NULL);
  if (s)
    lf_log_status(LF_LOG_WARN, "acquire: cache store", s);
  else
    LF_LOG_INFO("acquire: %s: stored in the cache (%.12s)", j->task->name,
                j->res->cache_digest);
}

/* After a reply that gave no verified kernel: a repair, a refinement that
 * carries the failure, or the end. `why` is the failure for the model. */
static void after_failure(ctx_t *c, job_t *j, const char *why,
                          size_t from_attempt) {
  free(j->feedback);
  j->feedback = xstrdup(why);
  j->feedback_attempt = from_attempt;
  if (j->best.kernel) {
    if (j->res->refinements >= c->o->max_refinements) {
      finish_best(c, j, LF_BUDGET_NONE, "refinement rounds used up");
      return;
    }
    j->kind = LF_REQUEST_REFINE;
    return;
  }
  if (table_next(c, j, why, from_attempt))
    return;
  if (fix_requests(j) >= c->o->max_attempts) {
    char msg[MESSAGE_MAX + 96];
    j->table_id[0] = '\0';
    char *short_why = shorten(why);
    int tried = j->res->requests - j->res->refinements;
    if (j->rej.kernel) {
      snprintf(msg, sizeof(msg),
               "no kernel passed verification in %d attempt(s); last: %s",
               tried, short_why ? short_why : "");
      finish_rejected(c, j, msg);
    } else {
      snprintf(msg, sizeof(msg), "no kernel built in %d attempt(s); last: %s",
               tried, short_why ? short_why : "");
      finish(c, j, LF_ACQUIRE_FAILED, LF_BUDGET_NONE, msg);
    }
    free(short_why);
    return;
  }
  j->kind = LF_REQUEST_REPAIR;
  if (j->synth_answered && c->o->provider == LF_PROVIDER_OPENAI) {
    /* The synthesized kernel failed: the model starts from its first
     * request (an adapt request when a table entry refuses these sizes),
     * not from a repair of a kernel it never wrote. */
    j->synth_answered = false;
    j->kind = LF_REQUEST_FIRST;
    adapt_prepare(c, j, NULL, NULL);
    free(j->feedback);
    j->feedback = NULL;
    j->feedback_attempt = 0;
    return;
  }
  if (j->table_id[0]) {
    /* The table's kernel failed at these sizes: the model's first request
     * adapts it (the failure is in the request) rather than repairing a
     * reply it never wrote. */
    char id[sizeof(j->table_id)];
    memcpy(id, j->table_id, sizeof(id));
    j->table_id[0] = '\0';
    /* After next entries failed too, the request adapts the first one
     * tried (the table's first choice: the most specific), with its
     * failure. */
    const char *failure = j->table_failure ? j->table_failure : why;
    size_t failed_attempt =
        j->table_failure ? j->table_failure_attempt : from_attempt;
    if (adapt_prepare(c, j, id, failure)) {
      j->kind = LF_REQUEST_FIRST;
      lf_acquire_result_t *r = j->res;
      if (failed_attempt && failed_attempt <= r->attempt_count) {
        lf_acquire_attempt_t *a = &r->attempts[failed_attempt - 1];
        free(a->feedback);
        a->feedback = xstrdup(failure);
      }
      free(j->feedback);
      j->feedback = NULL;
      j->feedback_attempt = 0;
    }
  }
}

/* Takes one variant's candidate (built, evaluated or not) into the job's
 * best or last rejection. Returns false when the loop must end now. */
typedef struct reply_state_s {
  double best_ms;    /* the fastest verified variant of this reply; 0 none */
  char *first_error; /* the first failure of this reply, for the model */
  size_t first_error_attempt;
  bool ended;
} reply_state_t;

static void note_error(reply_state_t *rs, const char *label, const char *why,
                       size_t attempt) {
  if (rs->first_error)
    return;
  lf_strbuf_t b;
  lf_strbuf_init(&b, 8192);
  if (label && label[0])
    lf_status_free(lf_strbuf_appendf(&b, "variant %s: ", label));
  lf_status_free(lf_strbuf_append_str(&b, why ? why : ""));
  rs->first_error = lf_strbuf_take(&b);
  rs->first_error_attempt = attempt;
}

/* One variant's build: what the build callback returned. */
typedef struct variant_build_s {
  lf_status_t bs;
  lf_acquire_build_t built;
  long build_ms;
} variant_build_t;

static void build_variant(ctx_t *c, job_t *j, const char *text,
                          size_t line_offset, const char *label,
                          variant_build_t *vb) {
  const lf_acquire_options_t *o = c->o;
  memset(vb, 0, sizeof(*vb));
  LF_LOG_INFO("acquire: %s: request %d%s%s: building (%zu bytes)",
              j->task->name, j->res->requests, label[0] ? ", variant " : "",
              label, strlen(text));
  build_enter(c);
  int64_t t0 = now_ms();
  vb->bs = o->build(j->task, text, line_offset, o->build_user, &vb->built);
  vb->build_ms = (long)(now_ms() - t0);
  build_leave(c);
}

/* Building ahead (the pass with a GPU): variant v + 1 builds on a thread of
 * its own while variant v is verified and timed, so that a subgraph's wall
 * time is about the sum of max(build, evaluation) per variant rather than
 * of both. Variant v + 1 is taken, tried and recorded after v as before;
 * if v ends the loop, its build is released unused. */
typedef struct ahead_s {
  ctx_t *c;
  job_t *j;
  const char *text, *label;
  size_t line_offset;
  variant_build_t vb;
  pthread_t thread;
  bool started;
} ahead_t;

static void *ahead_main(void *p) {
  ahead_t *a = p;
  build_variant(a->c, a->j, a->text, a->line_offset, a->label, &a->vb);
  return NULL;
}

static void ahead_start(ctx_t *c, job_t *j, const char *text,
                        size_t line_offset, const char *label, ahead_t *a) {
  memset(a, 0, sizeof(*a));
  a->c = c, a->j = j, a->text = text, a->label = label;
  a->line_offset = line_offset;
  a->started = pthread_create(&a->thread, NULL, ahead_main, a) == 0;
}

/* Waits for the build ahead; true (and *vb set) if there was one. */
static bool ahead_take(ahead_t *a, variant_build_t *vb) {
  if (!a->started)
    return false;
  pthread_join(a->thread, NULL);
  a->started = false;
  *vb = a->vb;
  return true;
}

/* Tries one variant (its build already done: `vb`, consumed) and, with an
 * evaluate callback, verifies it. */
static void try_variant(ctx_t *c, job_t *j, lf_acquire_attempt_t *a,
                        size_t attempt_index, const char *text,
                        size_t line_offset, const char *label,
                        reply_state_t *rs, variant_build_t *vb) {
  const lf_acquire_options_t *o = c->o;
  lf_acquire_build_t built = vb->built;
  lf_status_t bs = vb->bs;
  a->build_ms = vb->build_ms;
  memset(vb, 0, sizeof(*vb));
  int64_t t0;
  if (bs) {
    a->outcome = LF_ATTEMPT_ERROR;
    a->message = shorten(lf_status_message(bs));
    release(c, &built.artifact);
    finish_stopped(c, j, LF_ACQUIRE_ERROR, LF_BUDGET_NONE,
                   lf_status_message(bs));
    lf_status_free(bs);
    built_clear(&built);
    rs->ended = true;
    return;
  }
  if (!built.ok) {
    const char *why = built.repair_text && built.repair_text[0]
                          ? built.repair_text
                          : "the kernel did not build (no details)";
    a->outcome = LF_ATTEMPT_BUILD_FAILED;
    a->message = shorten(why);
    LF_LOG_INFO("acquire: %s: request %d%s%s: build failed in %ld ms: %s",
                j->task->name, j->res->requests, label[0] ? ", variant " : "",
                label, a->build_ms, a->message);
    note_error(rs, label, why, attempt_index);
    release(c, &built.artifact);
    built_clear(&built);
    return;
  }
  ++j->res->candidates;
  LF_LOG_INFO("acquire: %s: request %d%s%s: built in %ld ms", j->task->name,
              j->res->requests, label[0] ? ", variant " : "", label,
              a->build_ms);
  if (!o->evaluate) {
    /* Nothing can judge it here: the first kernel that builds is the
     * result, stored as unverified; the caller verifies it or defers. */
    a->outcome = LF_ATTEMPT_BUILT;
    a->kept = true;
    j->res->kernel = xstrdup(text);
    j->res->line_offset = line_offset;
    j->res->artifact = built.artifact;
    built.artifact = NULL;
    store(c, j, &built);
    built_clear(&built);
    finish(c, j, LF_ACQUIRE_OK, LF_BUDGET_NONE, "");
    rs->ended = true;
    return;
  }
  lf_acquire_eval_t ev;
  memset(&ev, 0, sizeof(ev));
  t0 = now_ms();
  lf_status_t es = o->evaluate(j->task, built.artifact, o->evaluate_user, &ev);
  ev.verify_ms = (long)(now_ms() - t0);
  a->verify_ms = ev.verify_ms;
  a->queue_ms = ev.queue_ms;
  void *artifact = built.artifact;
  built.artifact = NULL;
  built_clear(&built);
  if (es) {
    a->outcome = LF_ATTEMPT_ERROR;
    a->message = shorten(lf_status_message(es));
    release(c, &artifact);
    lf_acquire_eval_clear(&ev);
    finish_stopped(c, j, LF_ACQUIRE_ERROR, LF_BUDGET_NONE,
                   lf_status_message(es));
    lf_status_free(es);
    rs->ended = true;
    return;
  }
  free(a->verify_reason);
  a->verify_reason =
      xstrdup(ev.reason ? ev.reason : (ev.accepted ? "ok" : "?"));
  a->fallback_ms = ev.fallback_ms;
  if (ev.unjudged) {
    a->outcome = LF_ATTEMPT_UNJUDGED;
    a->message = shorten(ev.feedback);
    LF_LOG_INFO("acquire: %s: request %d: verification could not judge the "
                "kernel (%s): %s",
                j->task->name, j->res->requests, a->verify_reason, a->message);
    if (j->best.kernel) {
      release(c, &artifact);
      lf_acquire_eval_clear(&ev);
      finish_best(c, j, LF_BUDGET_NONE, "verification stopped working");
    } else {
      kept_t k = {0};
      kept_set(c, &k, j->res, text, line_offset, attempt_index, artifact, &ev);
      kept_to_result(&k, j->res);
      finish(c, j, LF_ACQUIRE_OK, LF_BUDGET_NONE, "unjudged");
    }
    rs->ended = true;
    return;
  }
  if (!ev.accepted) {
    a->outcome = LF_ATTEMPT_REJECTED;
    a->message = shorten(ev.feedback);
    LF_LOG_INFO("acquire: %s: request %d%s%s: rejected by verification in "
                "%ld ms (%s)",
                j->task->name, j->res->requests, label[0] ? ", variant " : "",
                label, ev.verify_ms, a->verify_reason);
    note_error(rs, label,
               ev.feedback && ev.feedback[0] ? ev.feedback
                                             : "verification rejected it",
               attempt_index);
    /* The last rejection is kept for the caller's record. */
    kept_set(c, &j->rej, j->res, text, line_offset, attempt_index, artifact,
             &ev);
    return;
  }
  a->outcome = LF_ATTEMPT_VERIFIED;
  a->message = xstrdup("");
  a->time_ms = ev.time_ms;
  a->roofline_fraction = lf_acquire_eval_fraction(&ev);
  LF_LOG_INFO("acquire: %s: request %d%s%s: verified in %ld ms: %.4g ms "
              "(fallback %.4g ms, %.0f%% of the roofline)",
              j->task->name, j->res->requests, label[0] ? ", variant " : "",
              label, ev.verify_ms, ev.time_ms, ev.fallback_ms,
              100 * a->roofline_fraction);
  if (rs->best_ms <= 0 || ev.time_ms < rs->best_ms)
    rs->best_ms = ev.time_ms;
  if (!j->best.kernel || ev.time_ms < j->best.eval.time_ms) {
    kept_set(c, &j->best, j->res, text, line_offset, attempt_index, artifact,
             &ev);
  } else {
    release(c, &artifact);
    lf_acquire_eval_clear(&ev);
  }
}

/* A verified kernel the model wrote joins the table under the subgraph's
 * pattern key. A template keeps the sizes it declares free, the others
 * fixed to this subgraph's (entry "grown_<fingerprint>"); a kernel written
 * for these sizes only has every size fixed ("grown_<fingerprint>_fixed",
 * so it never replaces a template grown for the same subgraph). A fixed
 * entry answers these sizes, and for other sizes it is what the table
 * refuses them with: the nearest such entry is the starting point of the
 * model's adapt request. A failure is a warning. */
static void grow_table(ctx_t *c, job_t *j, const char *template_text) {
  const lf_acquire_task_t *t = j->task;
  if (!c->o->table_grow_dir || !t->pattern || !t->num_pattern_sizes)
    return;
  int64_t fixed[LF_TABLE_MAX_SIZES];
  size_t n = t->num_pattern_sizes < LF_TABLE_MAX_SIZES ? t->num_pattern_sizes
                                                      : LF_TABLE_MAX_SIZES;
  char mark[48];
  for (size_t i = 0; i < n; ++i) {
    snprintf(mark, sizeof(mark), "llm-fuse.template-size S%zu", i);
    const char *at = strstr(template_text, mark);
    bool free_size = at && !(at[strlen(mark)] >= '0' && at[strlen(mark)] <= '9');
    fixed[i] = free_size ? -1 : t->pattern_sizes[i];
  }
  char source[256], name[40];
  snprintf(source, sizeof(source),
           "%s/%s, verified for %s at %s (%s)",
           j->res->provider ? j->res->provider : "?",
           j->res->model ? j->res->model : "?", t->name, t->arch,
           t->fingerprint);
  snprintf(name, sizeof(name), "grown_%.16s%s", t->fingerprint,
           lf_table_is_template(template_text) ? "" : "_fixed");
  lf_table_new_entry_t e = {t->pattern, t->arch,       t->klass,
                            fixed,      n,             template_text,
                            source,     name,          t->precision};
  char *path = NULL;
  lf_status_t s = lf_table_write_entry_signed(c->o->table_grow_dir, &e,
                                              c->o->table_signer, &path);
  if (s) {
    lf_log_status(LF_LOG_WARN, "acquire: pattern table: growth", s);
    return;
  }
  LF_LOG_INFO("acquire: %s: the verified %s joins the pattern table (%s)",
              t->name,
              lf_table_is_template(template_text)
                  ? "template"
                  : "kernel, fixed to these sizes,",
              path);
  free(path);
}

/* Extracts, expands and tries the candidates of one reply (heap). */
static void take_reply(ctx_t *c, job_t *j, lf_acquire_attempt_t *a,
                       char *reply) {
  free(j->last_reply);
  j->last_reply = reply;
  j->msg_count = 0; /* the messages may point at the old reply */
  size_t first_index = j->res->attempt_count; /* 1 + index of `a` */
  char *kernel = NULL;
  size_t offset = 0;
  lf_status_t s =
      lf_reply_extract_gpu_module(reply, strlen(reply), &kernel, &offset);
  lf_tune_set_t *set = NULL;
  /* A template from the model: its sizes bound to the subgraph's; if it
   * verifies, it joins the table (grow_table) for later sizes. */
  bool is_template = !s && lf_table_is_template(kernel);
  char *bound = NULL;
  if (is_template) {
    lf_strbuf_t b;
    lf_strbuf_init(&b, (size_t)64 << 20);
    s = j->task->num_pattern_sizes
            ? lf_table_bind_sizes(kernel, j->task->pattern_sizes,
                                  j->task->num_pattern_sizes, &b)
            : LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                        "the kernel declares llm-fuse.template-size lines, "
                        "but the subgraph's sizes are not known here");
    if (s)
      s = lf_status_annotate(s, "template");
    bound = s ? NULL : lf_strbuf_take(&b);
    lf_strbuf_free(&b);
  }
  if (!s) {
    const char *text = bound ? bound : kernel;
    s = lf_tune_expand(text, strlen(text), &set);
    if (s)
      s = lf_status_annotate(s, "tune");
  }
  free(bound);
  if (s) {
    a->outcome = kernel ? LF_ATTEMPT_BUILD_FAILED : LF_ATTEMPT_NO_KERNEL;
    a->message = shorten(lf_status_message(s));
    LF_LOG_INFO("acquire: %s: request %d: %s", j->task->name, j->res->requests,
                lf_status_message(s));
    after_failure(c, j, lf_status_message(s), first_index);
    lf_status_free(s);
    free(kernel);
    return;
  }
  if (set->tuned)
    LF_LOG_INFO("acquire: %s: request %d: %zu variant(s) declared (%zu "
                "excluded by their requirements)",
                j->task->name, j->res->requests, set->count, set->excluded);
  reply_state_t rs = {0};
  lf_acquire_attempt_t proto = *a;
  ahead_t ahead = {0};
  for (size_t v = 0; v < set->count && !rs.ended; ++v) {
    lf_acquire_attempt_t *av = a;
    size_t index = first_index;
    if (v > 0) {
      /* Each further variant is an attempt of its own (same request; the
       * request's latency and tokens stay on the first). */
      av = new_attempt(j, set->variants[v].label);
      if (!av) {
        finish_stopped(c, j, LF_ACQUIRE_ERROR, LF_BUDGET_NONE, "out of memory");
        rs.ended = true;
        break;
      }
      av->http_code = proto.http_code;
      index = j->res->attempt_count;
    } else {
      free(av->variant);
      av->variant = xstrdup(set->variants[v].label);
    }
    variant_build_t vb;
    if (!ahead_take(&ahead, &vb))
      build_variant(c, j, set->variants[v].text, offset,
                    set->variants[v].label, &vb);
    /* v will be evaluated: build v + 1 meanwhile. */
    if (c->o->evaluate && !c->o->no_build_ahead && v + 1 < set->count &&
        !vb.bs && vb.built.ok)
      ahead_start(c, j, set->variants[v + 1].text, offset,
                  set->variants[v + 1].label, &ahead);
    try_variant(c, j, av, index, set->variants[v].text, offset,
                set->variants[v].label, &rs, &vb);
  }
  variant_build_t unused;
  if (ahead_take(&ahead, &unused)) {
    LF_LOG_INFO("acquire: %s: request %d, variant %s: built ahead, not "
                "needed",
                j->task->name, j->res->requests, ahead.label);
    release(c, &unused.built.artifact);
    built_clear(&unused.built);
    lf_status_free(unused.bs);
  }
  lf_tune_set_destroy(set);
  /* A template from anyone (a replayed one too); a kernel for these sizes
   * only when the model wrote it (the replay set's kernels are the shipped
   * table's sources already, the table's and synth's are not new). */
  if (rs.best_ms > 0 && j->best.attempt >= first_index &&
      (is_template ||
       (j->res->provider && strcmp(j->res->provider, "openai") == 0)))
    grow_table(c, j, kernel);
  free(kernel);
  if (rs.ended) {
    free(rs.first_error);
    return;
  }
  if (rs.best_ms > 0) {
    j->last_ms = rs.best_ms;
    free(j->feedback);
    j->feedback = NULL;
    j->feedback_attempt = first_index;
    double f = lf_acquire_eval_fraction(&j->best.eval);
    if (j->res->refinements >= c->o->max_refinements)
      finish_best(c, j, LF_BUDGET_NONE,
                  c->o->max_refinements ? "refinement rounds used up"
                                        : "verified");
    else if (f >= c->o->stop_fraction)
      finish_best(c, j, LF_BUDGET_NONE, "within reach of the roofline");
    else
      j->kind = LF_REQUEST_REFINE;
  } else {
    after_failure(c, j, rs.first_error ? rs.first_error : "no variant was kept",
                  rs.first_error ? rs.first_error_attempt : first_index);
  }
  free(rs.first_error);
}

/* ---- The loop of one subgraph --------------------------------------------*/

static void run_job(ctx_t *c, job_t *j, lf_llm_client_t *client) {
  const lf_acquire_options_t *o = c->o;
  while (j->pending) {
    lf_acquire_budget_t b = admit(c);
    if (b != LF_BUDGET_NONE) {
      finish_stopped(c, j, LF_ACQUIRE_BUDGET, b, budget_sentence(b));
      break;
    }
    ++j->res->requests;
    if (j->kind == LF_REQUEST_REFINE)
      ++j->res->refinements;
    lf_status_t s = make_messages(c, j);
    if (s) {
      finish_stopped(c, j, LF_ACQUIRE_ERROR, LF_BUDGET_NONE,
                     lf_status_message(s));
      lf_status_free(s);
      break;
    }
    if (j->table_next.text)
      ; /* the table's next entry answers: table_answer() says so */
    else if (j->kind == LF_REQUEST_REFINE)
      LF_LOG_INFO("acquire: %s: asking %s (%s, refinement %d/%d, best %.4g "
                  "ms)",
                  j->task->name, lf_acquire_provider_name(o->provider),
                  o->model, j->res->refinements, o->max_refinements,
                  j->best.eval.time_ms);
    else
      LF_LOG_INFO("acquire: %s: asking %s (%s, attempt %d/%d, %s)",
                  j->task->name, lf_acquire_provider_name(o->provider),
                  o->model, fix_requests(j), o->max_attempts,
                  lf_acquire_request_kind_name(j->kind));
    lf_acquire_attempt_t *a = new_attempt(j, "");
    if (!a) {
      finish_stopped(c, j, LF_ACQUIRE_ERROR, LF_BUDGET_NONE, "out of memory");
      break;
    }
    char *reply = ask(c, j, client, a);
    if (!reply)
      break; /* ended */
    free(a->provider);
    free(a->model);
    a->provider = xstrdup(j->res->provider);
    a->model = xstrdup(j->res->model);
    take_reply(c, j, a, reply);
  }
  pthread_mutex_lock(&c->lock);
  if (j->res->requests > c->report->rounds)
    c->report->rounds = j->res->requests;
  pthread_mutex_unlock(&c->lock);
  /* Whatever the result did not take. */
  kept_clear(c, &j->best);
  kept_clear(c, &j->rej);
}

typedef struct loop_arg_s {
  ctx_t *c;
  lf_llm_client_t *client;
} loop_arg_t;

static void *loop_thread(void *arg) {
  loop_arg_t *la = arg;
  ctx_t *c = la->c;
  for (;;) {
    pthread_mutex_lock(&c->lock);
    while (c->next_job < c->count && !c->jobs[c->next_job].pending)
      ++c->next_job;
    size_t i = c->next_job < c->count ? c->next_job++ : c->count;
    pthread_mutex_unlock(&c->lock);
    if (i >= c->count)
      return NULL;
    run_job(c, &c->jobs[i], la->client);
  }
}

/* Runs the pending loops on c->threads threads (the caller's included). */
static lf_status_t run_loops(ctx_t *c) {
  loop_arg_t args[256];
  pthread_t tid[256];
  size_t n = c->threads ? c->threads : 1;
  if (n > 256)
    n = 256;
  size_t started = 0;
  for (size_t t = 0; t < n; ++t)
    args[t] = (loop_arg_t){c, c->clients ? c->clients[t] : NULL};
  for (size_t t = 1; t < n; ++t)
    if (pthread_create(&tid[started], NULL, loop_thread, &args[t]) == 0)
      ++started;
  loop_thread(&args[0]);
  for (size_t t = 0; t < started; ++t)
    pthread_join(tid[t], NULL);
  return LF_OK;
}

/* ---- The call ------------------------------------------------------------*/

static void result_init(lf_acquire_result_t *r) {
  memset(r, 0, sizeof(*r));
  r->message = xstrdup("");
  r->provider = xstrdup("");
  r->model = xstrdup("");
  r->first_request = xstrdup("");
}

lf_status_t lf_acquire_run(const lf_acquire_task_t *tasks, size_t count,
                           const lf_acquire_options_t *o,
                           lf_acquire_report_t **out_report) {
  *out_report = NULL;
  LF_RETURN_IF_ERROR(check_inputs(tasks, count, o));
  ctx_t c = {.o = o, .count = count, .start_ms = now_ms()};
  c.deadline_ms = c.start_ms + o->max_wall_ms;
  pthread_mutex_init(&c.lock, NULL);
  pthread_cond_init(&c.build_free, NULL);
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
  c.report->release = o->release;
  c.report->release_user = o->release_user;
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
    j->subject =
        (lf_prompt_subject_t){.name = tasks[i].name,
                              .fingerprint = tasks[i].fingerprint,
                              .klass = tasks[i].klass,
                              .ir = tasks[i].ir,
                              .signature = tasks[i].signature,
                              .arch = tasks[i].arch,
                              .gpu = o->gpu,
                              .pattern = tasks[i].pattern,
                              .pattern_sizes = tasks[i].pattern_sizes,
                              .num_pattern_sizes = tasks[i].num_pattern_sizes};
    j->key = (lf_cache_key_t){tasks[i].fingerprint,
                              tasks[i].arch,
                              o->toolchain,
                              lf_acquire_provider_name(o->provider),
                              o->model,
                              c.report->prompt_version,
                              tasks[i].precision};
    if (c.prompts)
      snprintf(j->replay_prompt, sizeof(j->replay_prompt), "%s%s",
               lf_prompt_set_major(c.prompts),
               is_tf32(&tasks[i]) ? "tf32" : "");
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

  c.threads = waiting < (size_t)o->max_concurrency ? waiting
                                                   : (size_t)o->max_concurrency;
  if (waiting && o->provider == LF_PROVIDER_OPENAI) {
    lf_llm_client_options_t co = o->client;
    co.model = o->model;
    co.max_concurrency = 1; /* one request at a time per loop thread */
    c.clients = calloc(c.threads, sizeof(*c.clients));
    lf_status_t cs =
        c.clients ? LF_OK
                  : LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    for (size_t t = 0; !cs && t < c.threads; ++t)
      cs = lf_llm_client_create(&co, &c.clients[t]);
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
                  waiting, lf_llm_client_endpoint(c.clients[0]), o->model,
                  o->max_concurrency);
    }
  }
  if (waiting)
    s = run_loops(&c);
  if (s)
    goto out_free;
  c.report->wall_ms = (long)(now_ms() - c.start_ms);
  size_t by[16] = {0};
  for (size_t i = 0; i < count; ++i)
    ++by[c.report->results[i].outcome & 15];
  LF_LOG_INFO("acquire: %zu subgraph(s) in %ld ms: %zu ok, %zu rejected, %zu "
              "cached, %zu "
              "failed, %zu budget-exhausted%s%s%s, %zu unavailable, %zu "
              "skipped; %ld request(s), at most %d per subgraph, %ld tokens",
              count, c.report->wall_ms, by[LF_ACQUIRE_OK],
              by[LF_ACQUIRE_REJECTED],
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
    free(j->first), free(j->last_reply), free(j->followup);
    free(j->feedback), free(j->adapt), free(j->table_failure);
    lf_table_match_clear(&j->table_next);
    kept_clear(&c, &j->best);
    kept_clear(&c, &j->rej);
  }
  free(c.jobs);
  for (size_t i = 0; c.clients && i < c.threads; ++i)
    lf_llm_client_destroy(c.clients[i]);
  free(c.clients);
  lf_acquire_report_destroy(c.report);
  lf_prompt_set_destroy(c.prompts);
  free(c.system);
  free(c.replay_dir);
  if (c.secret) {
    memset(c.secret, 0, strlen(c.secret));
    free(c.secret);
  }
  pthread_cond_destroy(&c.build_free);
  pthread_mutex_destroy(&c.lock);
  return s;
}

void lf_acquire_report_destroy(lf_acquire_report_t *report) {
  if (!report)
    return;
  for (size_t i = 0; report->results && i < report->count; ++i) {
    lf_acquire_result_t *r = &report->results[i];
    free(r->message), free(r->kernel), free(r->provider), free(r->model);
    free(r->first_request);
    lf_cache_entry_free(r->cache_entry);
    if (r->artifact && report->release)
      report->release(r->artifact, report->release_user);
    lf_acquire_eval_clear(&r->eval);
    for (size_t k = 0; k < r->attempt_count; ++k) {
      lf_acquire_attempt_t *a = &r->attempts[k];
      free(a->message), free(a->variant), free(a->verify_reason);
      free(a->feedback), free(a->provider), free(a->model);
    }
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
    ok =
        ok && cJSON_AddStringToObject(g, "first_request",
                                      r->first_request ? r->first_request : "");
    ok = ok && cJSON_AddStringToObject(g, "cache_digest", r->cache_digest);
    if (ok && r->cache_entry)
      ok = cJSON_AddStringToObject(
          g, "cache_verdict", lf_cache_verdict_name(r->cache_entry->verdict));
    ok = ok && cJSON_AddNumberToObject(g, "elapsed_ms", (double)r->elapsed_ms);
    ok = ok && cJSON_AddNumberToObject(g, "requests", r->requests);
    ok = ok && cJSON_AddNumberToObject(g, "refinements", r->refinements);
    ok = ok && cJSON_AddNumberToObject(g, "candidates", r->candidates);
    if (ok && r->evaluated) {
      cJSON *ev = cJSON_AddObjectToObject(g, "evaluation");
      ok = ev && cJSON_AddBoolToObject(ev, "accepted", r->eval.accepted);
      ok = ok && cJSON_AddBoolToObject(ev, "unjudged", r->eval.unjudged);
      ok = ok && cJSON_AddStringToObject(ev, "reason",
                                         r->eval.reason ? r->eval.reason : "");
      ok = ok && cJSON_AddNumberToObject(ev, "time_ms", r->eval.time_ms);
      ok =
          ok && cJSON_AddNumberToObject(ev, "fallback_ms", r->eval.fallback_ms);
      ok =
          ok && cJSON_AddNumberToObject(ev, "roofline_ms", r->eval.roofline_ms);
      ok = ok && cJSON_AddNumberToObject(ev, "roofline_fraction",
                                         lf_acquire_eval_fraction(&r->eval));
    }
    ok = ok && (atts = cJSON_AddArrayToObject(g, "attempts"));
    for (size_t k = 0; ok && k < r->attempt_count; ++k) {
      const lf_acquire_attempt_t *a = &r->attempts[k];
      cJSON *x = cJSON_CreateObject();
      ok = x && cJSON_AddItemToArray(atts, x);
      ok = ok && cJSON_AddStringToObject(x, "kind",
                                         lf_acquire_request_kind_name(a->kind));
      ok = ok && cJSON_AddNumberToObject(x, "request", a->request);
      ok = ok &&
           cJSON_AddStringToObject(x, "variant", a->variant ? a->variant : "");
      ok = ok &&
           cJSON_AddStringToObject(x, "stage", lf_acquire_attempt_stage(a));
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
      ok = ok && cJSON_AddNumberToObject(x, "verify_ms", (double)a->verify_ms);
      ok =
          ok && cJSON_AddNumberToObject(x, "gpu_queue_ms", (double)a->queue_ms);
      ok = ok &&
           cJSON_AddStringToObject(x, "verify_reason",
                                   a->verify_reason ? a->verify_reason : "");
      ok = ok && cJSON_AddNumberToObject(x, "time_ms", a->time_ms);
      ok = ok && cJSON_AddNumberToObject(x, "fallback_ms", a->fallback_ms);
      ok = ok && cJSON_AddNumberToObject(x, "roofline_fraction",
                                         a->roofline_fraction);
      ok = ok && cJSON_AddStringToObject(x, "feedback",
                                         a->feedback ? a->feedback : "");
      ok = ok && cJSON_AddBoolToObject(x, "kept", a->kept);
      ok = ok && cJSON_AddStringToObject(x, "provider",
                                         a->provider ? a->provider : "");
      ok = ok &&
           cJSON_AddStringToObject(x, "model", a->model ? a->model : "");
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
