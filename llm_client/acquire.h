/* acquire.h - a kernel for each outlined subgraph: one loop per subgraph
 * (request, build, verify, time, then repair or refine), within budgets.
 *
 * lf_acquire_run() takes N subgraph tasks and, for each:
 *  1. looks the kernel cache up (key: fingerprint, arch, toolchain,
 *     provider, model, full prompt version); a hit ends the task;
 *  2. otherwise runs the subgraph's loop on one of max_concurrency loop
 *     threads, so that while one subgraph's candidate is verified, the
 *     others' requests and builds go on:
 *     a. ask the provider: `openai` (the HTTP client, one per loop thread),
 *        `replay` (recorded exchanges, replay.h) or `none`;
 *     b. extract the reply's gpu.module (reply.h) and expand the variants it
 *        declares (tune.h: `// llm-fuse.tune`), at most 16;
 *     c. build each variant with the caller's build callback (at most
 *        build_concurrency builds at once across the module);
 *     d. when the caller gives an evaluate callback (a GPU is there):
 *        verify and time each built variant (the callback serializes the
 *        GPU: one queue); the fastest verified variant is the reply's result;
 *     e. a reply that yields no verified kernel goes back to the model with
 *        the build or verification error (a repair), up to max_attempts
 *        requests in all before the first verified kernel; a pattern table
 *        kernel that yields none gives way first to the table's next entry
 *        for the sizes, up to LF_ACQUIRE_TABLE_TRIES entries (options.table);
 *     f. after a verified kernel, up to max_refinements requests tell the
 *        model its time, the fallback's and the roofline floor and ask for a
 *        faster kernel; a refinement that fails or is slower never replaces
 *        the fastest verified kernel, and its failure goes back to the model
 *        in the next refinement; the loop stops early when the fastest
 *        kernel reaches stop_fraction of the roofline floor.
 *     Without an evaluate callback the first kernel that builds ends the
 *     loop and is stored in the cache as unverified (the caller verifies
 *     later, or defers); with one, nothing is stored here: the caller
 *     records the verdict of the kernel it keeps.
 * The loops run while the module's budgets (requests, tokens, wall time)
 * last; when one runs out, a subgraph keeps its fastest verified kernel if
 * it has one, else it ends as LF_ACQUIRE_BUDGET and the report names the
 * budget. The caller keeps their original ops.
 *
 * Every step is logged (base/log.h, info): cache hits, "asking", "reply"
 * with latency and tokens, "building", each attempt's result, and a summary.
 *
 * Secrets. The API key stays inside the HTTP client; in addition every
 * reply is redacted of the key's value (if the server echoes it) before it
 * is extracted, logged, recorded, cached or reported.
 *
 * offline=true never touches the network: the cache and the replay
 * provider work; provider openai ends every cache miss as
 * LF_ACQUIRE_UNAVAILABLE ("offline").
 */
#ifndef LF_LLM_CLIENT_ACQUIRE_H
#define LF_LLM_CLIENT_ACQUIRE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/sha256.h"
#include "base/status.h"
#include "llm_client/cache.h"
#include "llm_client/http_client.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The most pattern table entries tried for one subgraph, the first
/// included: when an entry's kernel fails, the next one that admits the
/// sizes answers the next request (lf_acquire_options_t.table).
#define LF_ACQUIRE_TABLE_TRIES 3

/// Where kernels come from.
typedef enum lf_acquire_provider_e {
  LF_PROVIDER_NONE = 0, /* ask nobody: every subgraph keeps its ops */
  LF_PROVIDER_OPENAI,   /* an OpenAI-compatible endpoint */
  LF_PROVIDER_REPLAY,   /* recorded exchanges (the offline default) */
} lf_acquire_provider_t;

/// "none", "openai", "replay".
const char *lf_acquire_provider_name(lf_acquire_provider_t provider);
/// Parses a provider name; INVALID_ARGUMENT names the accepted ones.
lf_status_t lf_acquire_provider_parse(const char *name,
                                      lf_acquire_provider_t *out_provider);

/// One subgraph. Every string is borrowed for the call.
typedef struct lf_acquire_task_s {
  const char *name;        /* the outlined function, "sg_<16 hex>" */
  const char *fingerprint; /* 64 lower-case hex */
  const char *klass;       /* "elementwise", "reduction", "contraction", ... */
  const char *ir;          /* canonical subgraph text, for the prompt */
  const char *signature;   /* function type, for the builder and prompt */
  const char *arch;        /* "sm_80", "sm_90", "sm_90a" */
  /* The pattern key and the sizes it binds (S0, S1, ...); NULL/0 when
   * unknown. With a pattern table, a replay miss is answered by the
   * table's template for the pattern, instantiated for these sizes. */
  const char *pattern;
  const int64_t *pattern_sizes;
  size_t num_pattern_sizes;
  /* The precision mode: NULL (the exact precision of the subgraph's types)
   * or "tf32" (a subgraph with an f32 contraction compiled with the pass
   * option tf32=1; tf32_k: the longest reduction of its f32 contractions).
   * A tf32 task has keys of its own: the cache key's precision field, the
   * replay set's prompt version "<major>tf32" (<fingerprint>.<arch>.
   * v1tf32.<n>.json), the table's tf32 entries first (then the exact
   * ones); with openai its first request says that TF32 is allowed. A task
   * without it keeps every key it had. */
  const char *precision;
  int64_t tf32_k;
  /* A kernel the compiler wrote itself for this subgraph (an elementwise-
   * only one: passes/synth_ew.h), gpu.module text, or NULL. It answers the
   * first request when the replay set (replay) and the pattern table have
   * none, before any model is asked, and is then built, verified, timed
   * and cached like any reply, with provider "synth" and model
   * `synth_source` (e.g. "synth-ew/1"). It never takes the place of a
   * replayed or table kernel. With openai, when it fails, the model's
   * first request is the blank one (or an adapt request), not a repair of
   * a kernel the model never wrote. */
  const char *synth_kernel;
  const char *synth_source;
} lf_acquire_task_t;

/// What the build callback reports for one candidate. Zeroed before the
/// call; heap members set by the callback are taken over by acquire.
typedef struct lf_acquire_build_s {
  bool ok;           /* the candidate built */
  char *repair_text; /* !ok: why, for the repair prompt (malloc'ed; cut to
                        2 KiB); NULL: a generic message */
  char *ptx;         /* ok: optional products for the cache (malloc'ed) */
  unsigned char *cubin;
  size_t cubin_len;
  char *record_json; /* ok: optional verification record for the cache
                        entry, a JSON object whose "status" is
                        "unverified" (malloc'ed); NULL: {"status":...} */
  void *artifact;    /* ok: the caller's build product, handed to evaluate
                        and, for the kept candidate, back in the result;
                        released with the release callback otherwise */
} lf_acquire_build_t;

/// What the evaluate callback reports for one built candidate. Zeroed
/// before the call; heap members (malloc'ed) are taken over by acquire.
typedef struct lf_acquire_eval_s {
  bool accepted;      /* verified: correct on every trial */
  bool unjudged;      /* the candidate could not be judged, through no fault of
                         its own (no reference, no worker, degenerate inputs):
                         the loop ends and nothing is told to the model */
  char *reason;       /* a short word: "ok", "mismatch", "timeout", ... */
  char *feedback;     /* !accepted: the located summary for the model (no seeds,
                         no tensors; cut to 2 KiB) */
  double time_ms;     /* accepted: the candidate's median time; 0 unknown */
  double fallback_ms; /* the fallback's median time; 0 unknown */
  double roofline_ms; /* the roofline floor; 0 unknown */
  char *roofline_basis; /* how the floor was computed, one line; or NULL */
  char *verdict_json;   /* the worker's verdict for the report, or NULL */
  long verify_ms;       /* set by acquire: the callback's wall time */
  long queue_ms;        /* of which the callback waited for the GPU */
} lf_acquire_eval_t;

/// Frees what `eval` owns and zeroes it. Accepts NULL.
void lf_acquire_eval_clear(lf_acquire_eval_t *eval);

/// roofline_ms / time_ms, or 0 when either is unknown.
double lf_acquire_eval_fraction(const lf_acquire_eval_t *eval);

/// Verifies and times one built candidate: `artifact` is what the build
/// callback returned for it. Returns OK with `out` filled for any verdict; a
/// non-OK status is an internal error that ends the subgraph as
/// LF_ACQUIRE_ERROR. Called from up to max_concurrency loop threads at once:
/// the callback serializes what must not overlap (the GPU).
typedef lf_status_t (*lf_acquire_eval_fn_t)(const lf_acquire_task_t *task,
                                            void *artifact, void *user,
                                            lf_acquire_eval_t *out);

/// Releases a build artifact. Called for every artifact acquire does not
/// hand back in a result.
typedef void (*lf_acquire_release_fn_t)(void *artifact, void *user);

/// Builds one candidate: `kernel` is the extracted gpu.module text,
/// `line_offset` the number of reply lines before it (for diagnostics that
/// point into the reply). Returns OK with `out` filled for any verdict; a
/// non-OK status means the builder itself failed (missing tool, I/O), which
/// ends that subgraph as LF_ACQUIRE_ERROR. Called from up to
/// build_concurrency threads at once, so it must be thread-safe when that
/// is above 1.
typedef lf_status_t (*lf_acquire_build_fn_t)(const lf_acquire_task_t *task,
                                             const char *kernel,
                                             size_t line_offset, void *user,
                                             lf_acquire_build_t *out);

/// Settings. Fill with lf_acquire_options_init(), then override. Every
/// pointer is borrowed for the call.
typedef struct lf_acquire_options_s {
  lf_acquire_provider_t provider; /* default replay */
  /// openai: the endpoint and HTTP behaviour (base_url, api_key_env,
  /// temperature, max_tokens, timeouts, retries). Its model and
  /// max_concurrency are overridden by the fields below.
  lf_llm_client_options_t client;
  const char *model;       /* sent to openai; the cache key's model;
                              default "gpt-4o" */
  const char *replay_dir;  /* replay: NULL = lf_replay_default_dir() */
  bool replay_strict;      /* replay: refuse entries made for another request */
  /// The pattern table (NULL: none; borrowed): with provider replay it
  /// answers a first request the replay set lacks; with openai it answers
  /// the first request before the model is asked (the model then refines
  /// the table's kernel), and the first request's examples are retrieved
  /// from it (lf_prompt_first: same pattern key, then same class and
  /// element type, then same class, then examples.json). With replay the
  /// prompt keeps the examples.json examples: it is rendered only for the
  /// token estimate and replay_strict, which must stay those of the
  /// recordings, so offline builds do not change with the table.
  const struct lf_table_s *table;
  /// Next entries: when the table's kernel for a subgraph fails (no
  /// variant built, or none verified), the next entry of the same key
  /// that admits its sizes answers the next request (the table's order:
  /// most specific first, then load order; in TF32 mode the remaining
  /// tf32 entries, then the exact ones), up to LF_ACQUIRE_TABLE_TRIES
  /// entries per subgraph, each built, verified and timed like the first.
  /// These requests count against the budgets but not against
  /// max_attempts (which bounds the model's requests). Only after the last
  /// of them fails does today's course follow (replay: the original ops;
  /// openai: the adapt request below, from the first entry tried).
  /// Adapt requests (openai): when the table holds an entry for the
  /// task's pattern key that refuses its sizes, or whose instantiation for
  /// them fails to build or verify, the model's first request is an adapt
  /// request (lf_prompt_adapt) from that entry (the nearest refusing one:
  /// lf_table_nearest) instead of the blank one; the result's
  /// first_request says which was sent. Later rounds are the usual repairs
  /// and refinements.
  /// Growth: where a verified kernel that the model wrote as a template
  /// (`// llm-fuse.template-size SK` lines) joins the pattern table, for
  /// later sizes to instantiate without a request (NULL: nowhere).
  const char *table_grow_dir;
  /// Signs the entries growth writes (NULL: unsigned; borrowed).
  const lf_signer_t *table_signer;
  const char *record_dir;  /* openai: also write every exchange here */
  const char *prompts_dir; /* NULL = lf_prompt_default_dir() */
  const char *gpu;         /* the GPU in words for the prompt; NULL: by arch */

  lf_cache_t *cache;     /* NULL: no cache */
  const char *toolchain; /* the cache key's toolchain; required with cache */
  bool offline;          /* never touch the network */

  int max_attempts;      /* first request plus repairs; default 4 */
  int max_concurrency;   /* requests in flight; default 8 */
  int build_concurrency; /* build callbacks at once; default 1 */
  /// With an evaluate callback, a reply's variant v + 1 is built while
  /// variant v is evaluated (a thread per subgraph loop; it takes a build
  /// slot like any build). true: one after the other.
  bool no_build_ahead;
  /// Budgets, per call; 0: no limit. Requests count provider requests
  /// (replay lookups too; HTTP retries of one request do not). Tokens are
  /// the reported usage (else bytes / 4), checked before each round, so
  /// one round's usage may overshoot. Wall time also aborts requests in
  /// flight when it ends.
  long max_requests;
  long max_tokens;
  long max_wall_ms;

  lf_acquire_build_fn_t build; /* required unless provider none */
  void *build_user;
  /// Optional: verify and time built candidates (a GPU is there). NULL: the
  /// first kernel that builds ends the loop.
  lf_acquire_eval_fn_t evaluate;
  void *evaluate_user;
  lf_acquire_release_fn_t release; /* required when builds make artifacts */
  void *release_user;
  int max_refinements;  /* speed rounds after the first verified kernel;
                           default 2; 0: off */
  double stop_fraction; /* stop refining at this fraction of the roofline
                           floor; default 0.9 (within 10%) */
} lf_acquire_options_t;

/// Fills `options` with the defaults above (client options included).
void lf_acquire_options_init(lf_acquire_options_t *options);

/// What became of one subgraph.
typedef enum lf_acquire_outcome_e {
  LF_ACQUIRE_OK = 0,          /* a new kernel that built */
  LF_ACQUIRE_CACHED,          /* from the cache */
  LF_ACQUIRE_CACHED_REJECTED, /* the cache says it failed verification:
                                 keep the original ops, ask nobody */
  LF_ACQUIRE_FAILED,          /* every attempt failed to build */
  LF_ACQUIRE_BUDGET,          /* a budget ran out before a kernel built */
  LF_ACQUIRE_UNAVAILABLE,     /* the provider gave no reply (HTTP error,
                                 replay miss, offline) */
  LF_ACQUIRE_SKIPPED,         /* provider none */
  LF_ACQUIRE_ERROR,           /* an internal error (build callback, I/O) */
  LF_ACQUIRE_REJECTED,        /* candidates built, but none passed
                                 verification in max_attempts requests;
                                 `kernel`/`artifact` hold the last one */
} lf_acquire_outcome_t;

/// "ok", "cached", "cached-rejected", "failed", "budget-exhausted",
/// "unavailable", "skipped", "error", "rejected".
const char *lf_acquire_outcome_name(lf_acquire_outcome_t outcome);

/// Which budget ran out.
typedef enum lf_acquire_budget_e {
  LF_BUDGET_NONE = 0,
  LF_BUDGET_REQUESTS,
  LF_BUDGET_TOKENS,
  LF_BUDGET_WALL,
} lf_acquire_budget_t;

/// "", "requests", "tokens", "wall".
const char *lf_acquire_budget_name(lf_acquire_budget_t budget);

/// What became of one attempt.
typedef enum lf_acquire_attempt_outcome_e {
  LF_ATTEMPT_BUILT = 0,      /* the reply's kernel built */
  LF_ATTEMPT_BUILD_FAILED,   /* it did not; a repair may follow */
  LF_ATTEMPT_NO_KERNEL,      /* the reply held no single gpu.module */
  LF_ATTEMPT_PROVIDER_ERROR, /* no reply (HTTP failure, replay miss) */
  LF_ATTEMPT_BUDGET,         /* cut short by the wall-time budget */
  LF_ATTEMPT_ERROR,          /* the build or evaluate callback failed */
  LF_ATTEMPT_VERIFIED,       /* built, verified and timed */
  LF_ATTEMPT_REJECTED,       /* built, but verification rejected it */
  LF_ATTEMPT_UNJUDGED,       /* built, but verification could not run */
} lf_acquire_attempt_outcome_t;

/// "built", "build-failed", "no-kernel", "provider-error", "budget",
/// "error", "verified", "rejected", "unjudged".
const char *lf_acquire_attempt_outcome_name(lf_acquire_attempt_outcome_t o);

/// Why a request was made.
typedef enum lf_acquire_request_kind_e {
  LF_REQUEST_FIRST = 0, /* the first request */
  LF_REQUEST_REPAIR,    /* after a build or verification failure */
  LF_REQUEST_REFINE,    /* after a verified kernel: make it faster */
} lf_acquire_request_kind_t;

/// "first", "repair", "refine".
const char *lf_acquire_request_kind_name(lf_acquire_request_kind_t kind);

/// One candidate: a request to the provider, or one variant of its reply,
/// and what came of it.
typedef struct lf_acquire_attempt_s {
  bool repair; /* false: the first request */
  lf_acquire_request_kind_t kind;
  int request;   /* the request it came from, 1-based */
  char *variant; /* the tune variant's label ("BLOCK=256"), "" if none */
  lf_acquire_attempt_outcome_t outcome;
  long latency_ms;    /* request, HTTP retries included */
  long build_ms;      /* 0 when nothing was built */
  long prompt_tokens; /* as reported, else estimated (bytes / 4) */
  long completion_tokens;
  bool tokens_estimated; /* the provider reported no usage */
  int http_attempts;     /* openai: HTTP attempts (retries + 1); else 0 */
  long http_code;        /* openai: of the last HTTP attempt; else 0 */
  char *message;         /* why it failed (short, key-free); "" if built */
  /* Verification (with an evaluate callback). */
  long verify_ms;      /* the evaluate callback, GPU queue included */
  long queue_ms;       /* of which waiting for the GPU */
  char *verify_reason; /* the verdict's word; "" when not evaluated */
  double time_ms, fallback_ms, roofline_fraction; /* 0 when unknown */
  char *feedback; /* what this attempt told the model in the next request
                     (repair or refinement text); "" when none was sent */
  bool kept;      /* the result's kernel is this attempt's */
  /* Who answered its request, as the result names them: "openai",
   * "replay"'s entry provider, "table" (model: the entry id), "synth". */
  char *provider;
  char *model;
} lf_acquire_attempt_t;

/// The stage an attempt ended in: "request" (no kernel came), "build",
/// "verify" (rejected or unjudged) or "time" (verified and timed); "" when
/// it was built and not evaluated.
const char *lf_acquire_attempt_stage(const lf_acquire_attempt_t *attempt);

/// The result for one task. Owned by the report.
typedef struct lf_acquire_result_s {
  lf_acquire_outcome_t outcome;
  lf_acquire_budget_t budget;    /* for LF_ACQUIRE_BUDGET */
  char *message;                 /* why, for every outcome but ok/cached; "" */
  char *kernel;                  /* ok/cached: the gpu.module text; else NULL */
  size_t line_offset;            /* reply lines before `kernel` (ok only) */
  char *provider;                /* who answered ("openai", "replay" or the
                                    replayed entry's provider, "table",
                                    "synth"); "" if nobody */
  char *model;                   /* the model that answered; "" if none */
  char *first_request;           /* the first request sent to the model
                                    (openai): "blank", or "adapt from <table
                                    entry> (verified at S0=*, S1=4096;
                                    refused: <why> | failed: <why>)"; ""
                                    when the model was not asked */
  lf_cache_entry_t *cache_entry; /* cached*: the entry (PTX, cubin, verdict,
                                    provenance); else NULL */
  char cache_digest[LF_SHA256_HEX_SIZE]; /* the key's digest; "" w/o cache */
  lf_acquire_attempt_t *attempts;
  size_t attempt_count;
  long elapsed_ms; /* from the start of the call to this task's end */
  /* The loop (with an evaluate callback). */
  void *artifact; /* ok/rejected: the kept candidate's build artifact, owned
                     by the caller now (release it); else NULL */
  bool evaluated; /* `eval` judged the kept candidate */
  lf_acquire_eval_t eval; /* the kept candidate's evaluation: the fastest
                             verified, or the last rejection */
  int requests;           /* provider requests made for this subgraph */
  int refinements;        /* of which refinement requests */
  int candidates;         /* candidates built (variants count one each) */
} lf_acquire_result_t;

/// The whole call. Owned by the caller: lf_acquire_report_destroy().
typedef struct lf_acquire_report_s {
  lf_acquire_result_t *results; /* one per task, in task order */
  size_t count;
  lf_acquire_budget_t exhausted; /* the budget that ran out, if any */
  char prompt_version[32];       /* full version; "" for provider none */
  long requests;                 /* provider requests made */
  long prompt_tokens, completion_tokens; /* reported or estimated */
  int rounds;   /* the most requests any one subgraph made */
  long wall_ms; /* the whole call */
  /* Releases the artifacts left in results (lf_acquire_report_destroy). */
  lf_acquire_release_fn_t release;
  void *release_user;
} lf_acquire_report_t;

/// Runs the acquire loop described at the top of this file. Returns non-OK
/// only when the call itself cannot run (bad options or tasks:
/// INVALID_ARGUMENT; prompt templates missing or malformed: NOT_FOUND /
/// INVALID_ARGUMENT), with `*out_report` NULL. Everything else is a
/// per-subgraph outcome in the report (an openai client that cannot be
/// made, e.g. no key for a remote endpoint, makes every cache miss
/// LF_ACQUIRE_UNAVAILABLE with its message). The report is owned by the
/// caller; results are in task order.
lf_status_t lf_acquire_run(const lf_acquire_task_t *tasks, size_t count,
                           const lf_acquire_options_t *options,
                           lf_acquire_report_t **out_report);

/// Frees a report and everything in it, releasing the artifacts the caller
/// left in its results (set a result's `artifact` to NULL to keep one).
/// Accepts NULL.
void lf_acquire_report_destroy(lf_acquire_report_t *report);

/// Serializes `report` (with its tasks' names and fingerprints) as JSON
/// (schema "llm-fuse-acquire/1"): totals, then per subgraph the outcome,
/// budget, message, provider, model, first_request, cache digest, attempts
/// and the kernel text when `with_kernels`. *out_json is malloc'ed.
lf_status_t lf_acquire_report_to_json(const lf_acquire_report_t *report,
                                      const lf_acquire_task_t *tasks,
                                      bool with_kernels, char **out_json);

#ifdef __cplusplus
}
#endif

#endif /* LF_LLM_CLIENT_ACQUIRE_H */
