/* llm_fuse.c - the `llm-fuse` driver pass.
 *
 * The whole pipeline on one module, in stages:
 *   1. partition and outline (outline.c): one private @sg_<hash> function
 *      per fusable subgraph;
 *   2. one loop per subgraph (llm_client/acquire.h): the cache, then the
 *      provider; each candidate is built in a child process (builder/) and,
 *      when there is a GPU and verify=auto, verified and timed in the worker
 *      process (one GPU queue for the module) with fresh seeds; build and
 *      verification failures go back to the model as repairs (max-attempts)
 *      and, after a verified kernel, its time against the roofline goes
 *      back as a request for a faster one (max-refinements); the fastest
 *      verified kernel is the subgraph's;
 *   3. without a GPU: keep the original ops, or defer (verify=defer);
 *   4. swap verified candidates that are fast enough (min-speedup over the
 *      fallback, min-roofline) into their function.
 * Every subgraph ends with a decision and a reason: a remark on the IR, a
 * record in the JSON report, a progress line while it runs and a row of the
 * summary table at the end. A subgraph that is not swapped keeps its
 * original ops; nothing unverified is ever swapped in.
 */
#include "passes/llm_fuse.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "builder/builder.h"
#include "dialect_bridge/bridge.h"
#include "llm_client/acquire.h"
#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/contraction.h"
#include "passes/defer.h"
#include "llm_client/remote.h"
#include "llm_client/sign.h"
#include "llm_client/table.h"
#include "passes/mlir_util.h"
#include "passes/outline.h"
#include "passes/reference.h"
#include "passes/swap.h"
#include "passes/synth_ew.h"
#include "runtime/cuda_driver.h"
#include "runtime/verify_client.h"

/* ---- Options. ---- */

static const char *const provider_choices[] = {"openai", "replay", "none",
                                               NULL};
static const char *const arch_choices[] = {"sm_80", "sm_90", "sm_90a", NULL};
static const char *const verify_choices[] = {"auto", "defer", "none", NULL};

#define OPT(field) offsetof(lf_fuse_options_t, field)
static const lf_option_def_t fuse_options[] = {
    {"provider", LF_OPTION_STRING, "replay",
     "Where candidate kernels come from: openai (an OpenAI-compatible "
     "endpoint), replay (recorded replies; the offline default) or none",
     provider_choices, 0, 0, OPT(provider)},
    {"endpoint", LF_OPTION_STRING, "https://api.openai.com/v1",
     "Base URL of the OpenAI-compatible chat API (https, or http to a "
     "loopback address)",
     NULL, 0, 0, OPT(endpoint)},
    {"model", LF_OPTION_STRING, "gpt-4o", "Model name sent to the endpoint",
     NULL, 0, 0, OPT(model)},
    {"api-key-env", LF_OPTION_STRING, "OPENAI_API_KEY",
     "Name of the environment variable that holds the API key (the key "
     "itself is never an option)",
     NULL, 0, 0, OPT(api_key_env)},
    {"replay-dir", LF_OPTION_STRING, "",
     "Directory of recorded exchanges for provider=replay (empty: the "
     "shipped kernels)",
     NULL, 0, 0, OPT(replay_dir)},
    {"cache-dir", LF_OPTION_STRING, "",
     "Kernel cache directory (empty: $XDG_CACHE_HOME/llm-fuse)", NULL, 0, 0,
     OPT(cache_dir)},
    {"offline", LF_OPTION_BOOL, "false",
     "Never touch the network: cache and replay only", NULL, 0, 0,
     OPT(offline)},
    {"arch", LF_OPTION_STRING, "sm_90a", "Target GPU architecture",
     arch_choices, 0, 0, OPT(arch)},
    {"verify", LF_OPTION_STRING, "auto",
     "auto: verify on the GPU at compile time when there is one, else keep "
     "the original ops; defer: embed candidate and fallback behind a "
     "first-call runtime check; none: never swap",
     verify_choices, 0, 0, OPT(verify)},
    {"min-speedup", LF_OPTION_DOUBLE, "1.0",
     "Swap a verified kernel only if reference_time / kernel_time reaches "
     "this",
     NULL, 0.0, 1000.0, OPT(min_speedup)},
    {"max-attempts", LF_OPTION_INT, "4",
     "Attempts per subgraph (first request plus repairs)", NULL, 1, 32,
     OPT(max_attempts)},
    {"build-ahead", LF_OPTION_BOOL, "true",
     "With a GPU, build a reply's next tune variant while the previous one is "
     "verified and timed (false: one after the other)",
     NULL, 0, 0, OPT(build_ahead)},
    {"max-concurrency", LF_OPTION_INT, "8",
     "Requests in flight at once, across subgraphs", NULL, 1, 256,
     OPT(max_concurrency)},
    {"max-requests", LF_OPTION_INT, "0",
     "Budget: provider requests per module (0: no limit)", NULL, 0, 1e9,
     OPT(max_requests)},
    {"max-tokens", LF_OPTION_INT, "0",
     "Budget: prompt plus completion tokens per module (0: no limit)", NULL, 0,
     1e12, OPT(max_tokens)},
    {"max-seconds", LF_OPTION_DOUBLE, "0",
     "Budget: wall time of kernel acquisition per module (0: no limit)", NULL,
     0, 1e6, OPT(max_seconds)},
    {"record-dir", LF_OPTION_STRING, "",
     "With provider=openai, also record every exchange here for later "
     "replay (replay-dir)",
     NULL, 0, 0, OPT(record_dir)},
    {"keep-temps", LF_OPTION_BOOL, "false",
     "Keep the folders staged for the verification worker (reference plan, "
     "candidate) and say where they are",
     NULL, 0, 0, OPT(keep_temps)},
    {"report", LF_OPTION_STRING, "",
     "Write a JSON report of every function and subgraph to this file", NULL, 0,
     0, OPT(report)},
    {"remarks", LF_OPTION_BOOL, "true",
     "Attach a remark to the IR for every function and subgraph", NULL, 0, 0,
     OPT(remarks)},
    {"guard-record", LF_OPTION_STRING, "",
     "verify=defer: the file where compiled models record each guard's "
     "decision (LLM_FUSE_GUARD_RECORD overrides it at run time; empty: "
     "$XDG_STATE_HOME/llm-fuse/guard.jsonl)",
     NULL, 0, 0, OPT(guard_record)},
    {"max-refinements", LF_OPTION_INT, "2",
     "Speed rounds per subgraph after its first verified kernel: the model "
     "hears its time, the fallback's and the roofline floor and is asked for "
     "a faster kernel (0: off)",
     NULL, 0, 32, OPT(max_refinements)},
    {"min-roofline", LF_OPTION_DOUBLE, "0",
     "Swap a verified kernel only if it reaches this fraction of the roofline "
     "floor (0: report only)",
     NULL, 0.0, 1.0, OPT(min_roofline)},
    {"http-timeout", LF_OPTION_DOUBLE, "1200",
     "Seconds one HTTP request to the endpoint may take in all (streamed "
     "replies are also cut after 300 s without a byte)",
     NULL, 1, 86400, OPT(http_timeout)},
    {"stream", LF_OPTION_BOOL, "true",
     "Ask the endpoint for a streamed reply (server-sent events); a server "
     "that answers with plain JSON is read as well. Turn off for servers "
     "that reject stream requests",
     NULL, 0, 0, OPT(stream)},
    {"remote-cache", LF_OPTION_STRING, "",
     "URL of a shared kernel cache on an HTTP store (GET/PUT/HEAD: nginx "
     "WebDAV, bazel-remote, S3 gateways), asked after a local miss (empty: "
     "$LLM_FUSE_REMOTE_CACHE; none when that is unset too; never with "
     "offline)",
     NULL, 0, 0, OPT(remote_cache)},
    {"remote-timeout", LF_OPTION_DOUBLE, "5",
     "Seconds one request to the remote cache may take; the first failure "
     "marks the store down for the rest of the run",
     NULL, 0.05, 600, OPT(remote_timeout)},
    {"remote-push", LF_OPTION_BOOL, "true",
     "Push every entry this build stores to the remote cache", NULL, 0, 0,
     OPT(remote_push)},
    {"signing-key", LF_OPTION_STRING, "",
     "Ed25519 private key file (PEM, mode 600) that signs the verdicts this "
     "machine records (empty: $LLM_FUSE_SIGNING_KEY; unsigned when unset)",
     NULL, 0, 0, OPT(signing_key)},
    {"trusted-keys", LF_OPTION_STRING, "",
     "File of trusted public keys ('ed25519 <base64>' lines): a remote "
     "cache's verdict counts only under one of their signatures (empty: "
     "$LLM_FUSE_TRUSTED_KEYS; trust nobody when unset)",
     NULL, 0, 0, OPT(trusted_keys)},
    {"pattern-table", LF_OPTION_STRING, "",
     "Folder of the pattern table, whose templates answer a subgraph's first "
     "request for any sizes they admit (replay: after the replay set; "
     "openai: before the model); verified model templates join "
     "<cache-dir>/table (empty: the shipped kernels/table; none: off)",
     NULL, 0, 0, OPT(pattern_table)},
    {"require-signed", LF_OPTION_BOOL, "false",
     "Ask for a trusted signature on the local cache's verdicts too (a "
     "cache folder that others can write)",
     NULL, 0, 0, OPT(require_signed)},
    {"tf32", LF_OPTION_BOOL, "false",
     "Allow TF32 tensor cores for the subgraphs with an f32 contraction (as "
     "PyTorch's allow_tf32): their kernels may round operands to TF32's "
     "10-bit mantissa and are verified with the TF32 tolerance for their "
     "reduction length; their cache, table and replay keys say tf32 (off: "
     "exact f32, every key unchanged)",
     NULL, 0, 0, OPT(tf32)},
    {"synth", LF_OPTION_BOOL, "true",
     "Let the compiler write the kernel of an elementwise-only subgraph "
     "itself (one fused grid-stride kernel, passes/synth_ew.h) when the "
     "replay set and the pattern table have none; it is built, verified, "
     "timed and cached like any candidate, with provider synth (false: off)",
     NULL, 0, 0, OPT(synth)},
};
#undef OPT

/* ---- Subgraphs. ---- */

/* What happened to one subgraph. */
typedef struct subgraph_s {
  MlirOperation func;
  MlirLocation loc;
  char *name;        /* sg_<16 hex> */
  char *fingerprint; /* 64 hex */
  char *cls;         /* elementwise | reduction | contraction | ... */
  char *signature;   /* the function type over tensors */
  char *prompt_text; /* what a prompt may show of it */
  char *synth_text;  /* the synthesized kernel (elementwise), or NULL */
  char *synth_note;  /* what the synthesizer did: "vector width 4, ..." or
                        "refused: <why>"; NULL when not asked */
  /* Acquisition and building. */
  lf_acquire_outcome_t acquire_outcome;
  char *provider; /* who answered: replay, openai, ... */
  char *model;
  char *kernel_text; /* the candidate's gpu.module text */
  char cache_digest[LF_SHA256_HEX_SIZE];
  lf_cache_verdict_t cached_verdict; /* for a cache hit */
  lf_cache_trust_t cache_trust;      /* why the cached verdict counts */
  char pattern[65];                  /* the pattern key; "" unknown */
  int64_t pattern_sizes[LF_TABLE_MAX_SIZES];
  size_t num_pattern_sizes;
  bool cache_from_remote;            /* the hit came from the remote store */
  char *cache_note;                  /* the cache's trust note */
  cJSON *verification;               /* the verdict or cached record */
  double flops;
  int attempts;
  cJSON *attempt_log;              /* array of per-attempt records, or NULL */
  lf_build_result_t *build;        /* the kept candidate's build (or the last
                                      failure), or NULL */
  lf_build_result_t *failed_build; /* the loop's last failed build */
  /* The loop's verification (a GPU at compile time). */
  bool evaluated;         /* the kept candidate was verified here: `eval` */
  lf_acquire_eval_t eval; /* its evaluation (times, verdict, summary) */
  int requests, refinements, candidates;
  /* Per-subgraph verification staging (loop threads). */
  bool ref_tried;
  char *ref_error; /* why the reference cannot be staged, or NULL */
  int cand_seq;    /* candidates staged so far */
  /* The decision. */
  bool swapped;
  bool deferred;     /* candidate and fallback behind the first-call guard */
  char *reason_word; /* short machine word, e.g. "no-gpu" */
  char *reason;      /* one sentence */
  double ms_acquire, ms_build, ms_verify;
  double speedup; /* reference / candidate time; 0 when not measured */
  /* TF32 mode (tf32=1, a subgraph with an f32 contraction): the longest
   * reduction of its f32 contractions; 0: exact precision. */
  int64_t tf32_k;
} subgraph_t;

typedef struct fuse_run_s {
  const lf_fuse_options_t *o;
  MlirOperation module;
  subgraph_t *subs;
  size_t num_subs;
  cJSON *groups;     /* the outline records */
  char *gpu_status;  /* why verification cannot run here; NULL: it can */
  lf_cache_t *cache; /* NULL: none */
  lf_remote_t *remote;   /* NULL: none */
  lf_signer_t *signer;   /* NULL: entries unsigned */
  lf_keyring_t *trusted; /* NULL: nobody trusted */
  lf_table_t *table;     /* the pattern table; NULL: none */
  char grow_dir[4200];   /* where verified model templates join it */
  char *cache_setup_error; /* why the remote or the keys are not used */
  char prompt_version[32];
  double ms_outline, ms_total;
  /* Verification inside the loops: one staging folder, MLIR work (the
   * reference lowering) one thread at a time, and one GPU queue. */
  char stage_root[64];
  bool staged;
  pthread_mutex_t mlir_lock, gpu_lock;
} fuse_run_t;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char *copy_ref(MlirStringRef ref) {
  return strndup(ref.data ? ref.data : "", ref.length);
}

static char *string_attr(MlirOperation op, const char *name) {
  MlirAttribute a =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a))
    return NULL;
  return copy_ref(mlirStringAttrGetValue(a));
}

static void subgraph_free(subgraph_t *sg) {
  free(sg->cache_note);
  free(sg->name);
  free(sg->fingerprint);
  free(sg->cls);
  free(sg->signature);
  free(sg->prompt_text);
  free(sg->synth_text);
  free(sg->synth_note);
  free(sg->provider);
  cJSON_Delete(sg->attempt_log);
  lf_build_result_destroy(sg->build);
  free(sg->model);
  free(sg->kernel_text);
  cJSON_Delete(sg->verification);
  free(sg->reason_word);
  free(sg->reason);
  lf_build_result_destroy(sg->failed_build);
  lf_acquire_eval_clear(&sg->eval);
  free(sg->ref_error);
}

static void run_free(fuse_run_t *run) {
  if (run->staged) {
    if (run->o->keep_temps)
      LF_LOG_INFO("verification folders kept in %s", run->stage_root);
    else
      lf_remove_tree(run->stage_root);
  }
  pthread_mutex_destroy(&run->mlir_lock);
  pthread_mutex_destroy(&run->gpu_lock);
  for (size_t i = 0; i < run->num_subs; ++i)
    subgraph_free(&run->subs[i]);
  free(run->subs);
  cJSON_Delete(run->groups);
  free(run->gpu_status);
  lf_cache_close(run->cache);
  lf_remote_close(run->remote);
  lf_signer_free(run->signer);
  lf_keyring_free(run->trusted);
  lf_table_close(run->table);
  free(run->cache_setup_error);
}

/* Sets the decision's reason (the first one set wins: it is the cause). */
static void set_reason(subgraph_t *sg, const char *word, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_reason(subgraph_t *sg, const char *word, const char *fmt, ...) {
  if (sg->reason_word)
    return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  sg->reason_word = strdup(word);
  sg->reason = strdup(buf);
}

/* ---- TF32 mode: which subgraphs hold an f32 contraction. ---- */

static bool is_f32_tensor(MlirType t) {
  return mlirTypeIsAShaped(t) &&
         mlirTypeIsAF32(mlirShapedTypeGetElementType(t));
}

/* The longest reduction of the f32 contractions in outlined function
 * `func`: 0 when it has none (then TF32 mode leaves it exact). */
static int64_t f32_contraction_k(MlirOperation func) {
  int64_t best = 0;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body))
    return 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    const lf_contraction_filter_t f32 = {.input = is_f32_tensor};
    int64_t k = lf_contraction_k(op, &f32);
    best = k > best ? k : best;
  }
  return best;
}

/* The outlined functions, in module order. */
static lf_status_t collect_subgraphs(fuse_run_t *run) {
  MlirBlock body =
      mlirRegionGetFirstBlock(mlirOperationGetRegion(run->module, 0));
  size_t cap = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    char *fp = string_attr(op, LF_ATTR_FINGERPRINT);
    if (!fp)
      continue;
    if (run->num_subs == cap) {
      cap = cap ? 2 * cap : 16;
      subgraph_t *p = realloc(run->subs, cap * sizeof(*p));
      if (!p) {
        free(fp);
        return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
      }
      run->subs = p;
    }
    subgraph_t *sg = &run->subs[run->num_subs++];
    memset(sg, 0, sizeof(*sg));
    sg->func = op;
    sg->loc = mlirOperationGetLocation(op);
    sg->fingerprint = fp;
    sg->name = string_attr(op, "sym_name");
    sg->cls = string_attr(op, LF_ATTR_CLASS);
    MlirAttribute ft = mlirOperationGetAttributeByName(
        op, mlirStringRefCreateFromCString("function_type"));
    sg->signature = lf_type_dup(mlirTypeAttrGetValue(ft));
    /* TF32 mode covers contraction-class subgraphs (GEMMs and their
     * elementwise epilogues), whose error the verifier's componentwise
     * TF32 bound models (docs/verification.md, "TF32 mode"); an
     * attention-like subgraph stays exact f32, as PyTorch's fused
     * attention ignores allow_tf32. */
    if (run->o->tf32 && sg->cls && strcmp(sg->cls, "contraction") == 0)
      sg->tf32_k = f32_contraction_k(op);
    lf_strbuf_t text;
    lf_strbuf_init(&text, 16 << 20);
    lf_status_t st = lf_outline_prompt_text(op, &text);
    sg->prompt_text = lf_strbuf_take(&text);
    if (st)
      return st;
    if (!sg->name || !sg->cls || !sg->signature || !sg->prompt_text)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  return LF_OK;
}

/* Sizes that happen to be equal give a pattern a key of its own (the key
 * keeps equalities). When the table has no entry for that key on this
 * arch, the table's index may know the same pattern at distinct sizes
 * (lf_table_coincident): the subgraph then asks for that key, its symbols
 * bound to the equal values, and the outline record says so under
 * "table_pattern" (docs/pattern-key.md, "Coincident sizes"). */
static void coincident_pattern(const fuse_run_t *run, subgraph_t *sg,
                               cJSON *g) {
  const cJSON *pt = cJSON_GetObjectItemCaseSensitive(g, "pattern_text");
  if (!run->table || !cJSON_IsString(pt) ||
      lf_table_has_pattern(run->table, sg->pattern, run->o->arch))
    return;
  char key[65];
  int64_t sizes[LF_TABLE_MAX_SIZES];
  size_t n = 0;
  lf_status_t st = lf_table_coincident(
      run->table, pt->valuestring, sg->pattern_sizes, sg->num_pattern_sizes,
      run->o->arch, key, sizes, &n);
  if (st) {
    lf_status_free(st);
    return;
  }
  lf_strbuf_t b;
  lf_strbuf_init(&b, 1024);
  for (size_t i = 0; i < n; ++i)
    lf_strbuf_appendf(&b, "%sS%zu=%lld", i ? " " : "", i, (long long)sizes[i]);
  LF_LOG_INFO("%s: pattern %.16s has no template for %s; its sizes coincide: "
              "asking the table for pattern %.16s, the same ops at distinct "
              "sizes (%s)",
              sg->name, sg->pattern, run->o->arch, key, lf_strbuf_cstr(&b));
  lf_strbuf_free(&b);
  cJSON *tp = cJSON_CreateObject();
  cJSON *ts = tp ? cJSON_AddObjectToObject(tp, "pattern_sizes") : NULL;
  if (tp && ts) {
    cJSON_AddStringToObject(tp, "pattern", key);
    for (size_t i = 0; i < n; ++i) {
      char sym[24];
      snprintf(sym, sizeof(sym), "S%zu", i);
      cJSON_AddNumberToObject(ts, sym, (double)sizes[i]);
    }
    cJSON_AddItemToObject(g, "table_pattern", tp);
  } else {
    cJSON_Delete(tp);
  }
  snprintf(sg->pattern, sizeof(sg->pattern), "%s", key);
  for (size_t i = 0; i < n; ++i)
    sg->pattern_sizes[i] = sizes[i];
  sg->num_pattern_sizes = n;
}

/* The pattern key and the sizes it binds, from the outline record. */
static void group_pattern(const fuse_run_t *run, subgraph_t *sg) {
  const cJSON *g;
  cJSON_ArrayForEach(g, run->groups) {
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(g, "name");
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(g, "pattern");
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(g, "pattern_sizes");
    if (!cJSON_IsString(fn) || strcmp(fn->valuestring, sg->name) != 0 ||
        !cJSON_IsString(pk) || !cJSON_IsObject(ps))
      continue;
    size_t n = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, ps) {
      if (n >= LF_TABLE_MAX_SIZES || !cJSON_IsNumber(v))
        return;
      sg->pattern_sizes[n++] = (int64_t)v->valuedouble;
    }
    snprintf(sg->pattern, sizeof(sg->pattern), "%s", pk->valuestring);
    sg->num_pattern_sizes = n;
    coincident_pattern(run, sg, (cJSON *)g);
    return;
  }
}

/* The subgraph's FLOPs from the outline records (matched by the outlined
 * function's name; "function" is the function it was outlined from). */
static double group_flops(const fuse_run_t *run, const char *name) {
  const cJSON *g;
  cJSON_ArrayForEach(g, run->groups) {
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(g, "name");
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(g, "flops");
    if (cJSON_IsString(fn) && !strcmp(fn->valuestring, name) &&
        cJSON_IsNumber(fl))
      return fl->valuedouble;
  }
  return 0;
}

/* ---- Verification of one candidate (loop threads) ---- */

/* A fresh seed per candidate, from the kernel's entropy pool: a
 * refinement is never verified on inputs the model has seen. */
static uint64_t fresh_seed(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    v = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
  }
  return v ? v : 1;
}

/* Stages sg's reference lowering once (MLIR work: one thread at a time).
 * Returns the reference folder's plan path in `plan`, or sets
 * sg->ref_error. */
static bool stage_reference(fuse_run_t *run, subgraph_t *sg, char *plan,
                            size_t plan_size) {
  char refdir[4200];
  snprintf(refdir, sizeof(refdir), "%s/%s/reference", run->stage_root,
           sg->name);
  snprintf(plan, plan_size, "%s/plan.json", refdir);
  pthread_mutex_lock(&run->mlir_lock);
  if (!sg->ref_tried) {
    sg->ref_tried = true;
    char buf[1024];
    lf_reference_t ref = {0};
    double ms_ref = 0;
    lf_status_t st = lf_reference_lower(sg->func, &ref);
    if (!st)
      st = lf_make_dirs(refdir);
    if (!st)
      st = lf_reference_stage(&ref, run->o->arch, refdir, true, &ms_ref);
    lf_reference_free(&ref);
    if (st) {
      sg->ref_error = strdup(lf_status_format(st, buf, sizeof(buf)));
      lf_status_free(st);
    }
  }
  bool ok = sg->ref_error == NULL;
  pthread_mutex_unlock(&run->mlir_lock);
  return ok;
}

/* The times of a verdict (its "timing" object): the candidate's and the
 * fallback's medians, the dense roofline floor and how it was computed.
 * Leaves them 0 / NULL when the verdict has no timing. */
static void eval_timing(const cJSON *verdict, lf_acquire_eval_t *out) {
  const cJSON *t =
      verdict ? cJSON_GetObjectItemCaseSensitive(verdict, "timing") : NULL;
  if (!cJSON_IsObject(t))
    return;
#define NUM(k)                                                                 \
  (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(t, k))                      \
       ? cJSON_GetObjectItemCaseSensitive(t, k)->valuedouble                   \
       : 0)
  out->time_ms = NUM("candidate_ms");
  out->fallback_ms = NUM("reference_ms");
  out->roofline_ms = NUM("dense_roofline_ms");
  char basis[320];
  double bytes = NUM("bytes_in") + NUM("bytes_out");
  double gbs = NUM("measured_bandwidth_gbs"), peak = NUM("dense_peak_flops");
  double t_bytes = gbs > 0 ? bytes / (gbs * 1e6) : 0;
  double t_flops = peak > 0 ? NUM("flops") / peak * 1e3 : 0;
  snprintf(basis, sizeof(basis),
           "%.4g MB at the measured %.0f GB/s; %.4g GFLOP at %.0f TFLOP/s; %s",
           bytes / 1e6, gbs, NUM("flops") / 1e9, peak / 1e12,
           t_flops > t_bytes ? "the FLOP term is the larger: compute-bound"
                             : "the bytes term is the larger: memory-bound");
#undef NUM
  free(out->roofline_basis);
  out->roofline_basis = strdup(basis);
}

/* Fills `out` from a verdict: times, roofline, and for a rejection the
 * summary the model gets. */
static void eval_from_verdict(const lf_verdict_t *v, lf_acquire_eval_t *out) {
  out->accepted = v->accepted;
  out->reason = strdup(v->reason ? v->reason : "?");
  out->unjudged = !v->accepted && lf_verdict_reason_unjudged(v->reason);
  out->verdict_json = v->json ? strdup(v->json) : NULL;
  cJSON *root = v->json ? cJSON_Parse(v->json) : NULL;
  eval_timing(root, out);
  cJSON_Delete(root);
  if (!v->accepted) {
    lf_strbuf_t fb;
    lf_strbuf_init(&fb, LF_VERDICT_FEEDBACK_MAX + 64);
    lf_status_t st = v->json ? lf_verdict_feedback(v->json, &fb)
                             : LF_STATUS(LF_STATUS_DATA_LOSS, "no verdict");
    if (st) {
      lf_status_free(st);
      lf_strbuf_truncate(&fb, 0);
      lf_status_free(lf_strbuf_appendf(&fb,
                                       "verification rejected the kernel: %s",
                                       v->reason ? v->reason : "?"));
    }
    out->feedback = lf_strbuf_take(&fb);
  }
}

/* Verifies and times `build` (sg's candidate) in the worker process: the
 * reference staged once, the candidate in a folder of its own, a fresh
 * seed, the GPU held for the worker's run only. */
static void verify_build(fuse_run_t *run, subgraph_t *sg,
                         const lf_build_result_t *build,
                         lf_acquire_eval_t *out) {
  char plan[4300], canddir[4300], cand[4400];
  if (!stage_reference(run, sg, plan, sizeof(plan))) {
    out->unjudged = true;
    out->reason = strdup("no-reference");
    char msg[1200];
    snprintf(msg, sizeof(msg),
             "the reference to verify against could not be built: %s",
             sg->ref_error);
    out->feedback = strdup(msg);
    return;
  }
  snprintf(canddir, sizeof(canddir), "%s/%s/candidate-%d", run->stage_root,
           sg->name, ++sg->cand_seq);
  snprintf(cand, sizeof(cand), "%s/result.json", canddir);
  char buf[1024];
  lf_status_t st = lf_build_result_write_dir(build, canddir, NULL);
  if (st) {
    out->unjudged = true;
    out->reason = strdup("verify-error");
    out->feedback = strdup(lf_status_format(st, buf, sizeof(buf)));
    lf_status_free(st);
    return;
  }
  lf_verify_request_t req;
  lf_verify_request_init(&req);
  req.plan_path = plan;
  req.candidate_path = cand;
  req.flops = sg->flops;
  req.seed = fresh_seed();
  req.lenient_nonfinite = strcmp(sg->cls, "attention-like") == 0;
  req.min_speedup = 0; /* speed is the pass's decision: min-speedup */
  char tf32_k[32];
  const char *tf32_args[] = {"--tf32-k", tf32_k, NULL};
  if (sg->tf32_k > 0) {
    snprintf(tf32_k, sizeof(tf32_k), "%lld", (long long)sg->tf32_k);
    req.extra_args = tf32_args;
  }
  lf_verdict_t v = {0};
  double q0 = now_ms();
  pthread_mutex_lock(&run->gpu_lock);
  out->queue_ms = (long)(now_ms() - q0);
  st = lf_verify_candidate(&req, &v);
  pthread_mutex_unlock(&run->gpu_lock);
  if (st) {
    out->unjudged = true;
    out->reason = strdup("verify-error");
    char msg[1200];
    snprintf(msg, sizeof(msg), "the verification worker could not run: %s",
             lf_status_format(st, buf, sizeof(buf)));
    out->feedback = strdup(msg);
    lf_status_free(st);
    return;
  }
  eval_from_verdict(&v, out);
  lf_verdict_free(&v);
}

/* ---- Stage 2: acquire and build. ---- */

/* A cache entry's verification record: the verdict's name as "status",
 * the build's launch metadata as "build" (what a later cache hit needs to
 * swap without building again) and, when there is one, the worker's
 * verdict. Malloc'ed JSON text, or NULL when out of memory. */
static char *record_json(const lf_build_result_t *build,
                         lf_cache_verdict_t verdict,
                         const cJSON *verification) {
  cJSON *rec = cJSON_CreateObject();
  char *bj = NULL;
  if (!rec || lf_build_result_to_json(build, NULL, NULL, &bj)) {
    cJSON_Delete(rec);
    free(bj);
    return NULL;
  }
  cJSON_AddStringToObject(rec, "status", lf_cache_verdict_name(verdict));
  cJSON_AddItemToObject(rec, "build", cJSON_Parse(bj));
  free(bj);
  if (verification)
    cJSON_AddItemToObject(rec, "verdict", cJSON_Duplicate(verification, true));
  char *text = cJSON_PrintUnformatted(rec);
  cJSON_Delete(rec);
  return text;
}

/* The build callback of the acquire loop: the candidate is built in the
 * builder's child process; a success is kept on the subgraph (its launch
 * geometry and parameters are what a swap needs). */
typedef struct build_ctx_s {
  fuse_run_t *run;
  const lf_acquire_task_t *tasks;
  bool evaluating; /* candidates are verified in the loop: acquire stores
                      nothing, so the build products are not copied for it */
} build_ctx_t;

/* `sg` takes over `ev` (zeroed): its times, speed-up and verdict. */
static void take_eval(subgraph_t *sg, lf_acquire_eval_t *ev) {
  lf_acquire_eval_clear(&sg->eval);
  sg->eval = *ev;
  memset(ev, 0, sizeof(*ev));
  sg->evaluated = true;
  if (sg->eval.time_ms > 0)
    sg->speedup = sg->eval.fallback_ms / sg->eval.time_ms;
  cJSON_Delete(sg->verification);
  sg->verification =
      sg->eval.verdict_json ? cJSON_Parse(sg->eval.verdict_json) : NULL;
}

static lf_status_t build_cb(const lf_acquire_task_t *task, const char *kernel,
                            size_t line_offset, void *user,
                            lf_acquire_build_t *out) {
  build_ctx_t *ctx = user;
  subgraph_t *sg = &ctx->run->subs[task - ctx->tasks];
  lf_build_request_t req = {0};
  req.kernel_text = kernel;
  req.kernel_size = strlen(kernel);
  req.signature = sg->signature;
  req.line_offset = (int)line_offset;
  req.chip = ctx->run->o->arch;
  lf_build_result_t *res = NULL;
  double t0 = now_ms();
  LF_RETURN_IF_ERROR(lf_build_kernel(&req, NULL, &res));
  sg->ms_build += now_ms() - t0;
  if (res->kind == LF_BUILD_OK) {
    out->ok = true;
    out->artifact = res; /* the loop's until it is kept or released */
    if (ctx->evaluating)
      return LF_OK; /* the pass records the verdict of the kept one */
    /* Stored with the kernel by the acquire loop when nothing verifies it
     * here, so that the entry is complete (unverified). */
    out->record_json = record_json(res, LF_CACHE_UNVERIFIED, NULL);
    if (res->ptx)
      out->ptx = strdup(res->ptx);
    if (res->cubin && (out->cubin = malloc(res->cubin_size))) {
      memcpy(out->cubin, res->cubin, res->cubin_size);
      out->cubin_len = res->cubin_size;
    }
    return LF_OK;
  }
  lf_strbuf_t repair;
  lf_strbuf_init(&repair, LF_BUILD_REPAIR_CAP + 1);
  lf_status_free(lf_build_result_repair_text(res, &repair));
  out->repair_text = lf_strbuf_take(&repair);
  /* The last failure, for the report when nothing builds. */
  lf_build_result_destroy(sg->failed_build);
  sg->failed_build = res;
  return LF_OK;
}

static void release_cb(void *artifact, void *user) {
  (void)user;
  lf_build_result_destroy(artifact);
}

/* Which reference judged a verdict's values, for the progress line: ""
 * for the upstream one, else ", values judged against the opmath-f32
 * reference" (a subgraph that accumulates in 16 bits). */
static const char *judged_by(const char *verdict_json) {
  cJSON *v = verdict_json ? cJSON_Parse(verdict_json) : NULL;
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(v, "reference");
  bool opmath = cJSON_IsString(r) &&
                strcmp(r->valuestring, LF_REFERENCE_OPMATH_KIND) == 0;
  cJSON_Delete(v);
  return opmath ? ", values judged against the " LF_REFERENCE_OPMATH_KIND
                  " reference"
                : "";
}

/* The acquire loop's evaluate callback: verification and timing on the
 * GPU (verify_build), with progress lines. */
static lf_status_t eval_cb(const lf_acquire_task_t *task, void *artifact,
                           void *user, lf_acquire_eval_t *out) {
  build_ctx_t *ctx = user;
  size_t i = (size_t)(task - ctx->tasks);
  subgraph_t *sg = &ctx->run->subs[i];
  const lf_build_result_t *b = artifact;
  LF_LOG_INFO("[%zu/%zu] %s (%s): verifying kernel %s on the GPU", i + 1,
              ctx->run->num_subs, sg->name, sg->cls, b->kernel_name);
  double t0 = now_ms();
  verify_build(ctx->run, sg, b, out);
  double ms = now_ms() - t0;
  sg->ms_verify += ms;
  if (out->accepted)
    LF_LOG_INFO("[%zu/%zu] %s: verified in %.0f ms: %.4g ms, %.2fx the "
                "fallback, %.0f%% of the roofline%s",
                i + 1, ctx->run->num_subs, sg->name, ms, out->time_ms,
                out->time_ms > 0 ? out->fallback_ms / out->time_ms : 0,
                100 * lf_acquire_eval_fraction(out),
                judged_by(out->verdict_json));
  else
    LF_LOG_INFO("[%zu/%zu] %s: %s in %.0f ms (%s%s)", i + 1, ctx->run->num_subs,
                sg->name, out->unjudged ? "not judged" : "rejected", ms,
                out->reason ? out->reason : "?", judged_by(out->verdict_json));
  return LF_OK;
}

/* A cached kernel's build: the metadata stored with it (its
 * verification record's "build" member) plus its PTX and cubin. */
static lf_status_t build_from_cache(const lf_cache_entry_t *e,
                                    lf_build_result_t **out) {
  *out = NULL;
  cJSON *rec = e->verification_json ? cJSON_Parse(e->verification_json) : NULL;
  cJSON *b = rec ? cJSON_GetObjectItemCaseSensitive(rec, "build") : NULL;
  char *text = b ? cJSON_PrintUnformatted(b) : NULL;
  cJSON_Delete(rec);
  if (!text)
    return LF_STATUS(LF_STATUS_DATA_LOSS,
                     "the cache entry has no build record");
  lf_status_t st = lf_build_result_from_json(text, strlen(text), out);
  cJSON_free(text);
  if (st)
    return st;
  lf_build_result_t *r = *out;
  if (r->kind != LF_BUILD_OK || !r->kernel_name) {
    lf_build_result_destroy(r);
    *out = NULL;
    return LF_STATUS(LF_STATUS_DATA_LOSS,
                     "the cache entry's build record is not a success");
  }
  if (e->ptx) {
    r->ptx = strdup(e->ptx);
    r->ptx_size = strlen(e->ptx);
  }
  if (e->cubin && (r->cubin = malloc(e->cubin_len))) {
    memcpy(r->cubin, e->cubin, e->cubin_len);
    r->cubin_size = e->cubin_len;
  }
  if (!r->ptx && !r->cubin) {
    lf_build_result_destroy(r);
    *out = NULL;
    return LF_STATUS(LF_STATUS_DATA_LOSS, "the cache entry has no binary");
  }
  return LF_OK;
}

/* An option's value, else the environment variable's; NULL when neither. */
static const char *option_or_env(const char *value, const char *env) {
  if (value && *value)
    return value;
  const char *v = getenv(env);
  return v && *v ? v : NULL;
}

/* The keys and the remote store. A bad key file or URL is an error of the
 * pass (the user asked for it); a store that is down is not (it is found
 * out later and costs at most one timeout). */
static lf_status_t open_cache_peers(fuse_run_t *run) {
  const lf_fuse_options_t *o = run->o;
  const char *path = option_or_env(o->signing_key, LF_SIGN_KEY_ENV);
  if (path) {
    lf_status_t st = lf_signer_load(path, &run->signer);
    if (st)
      return lf_status_annotate(st, "signing-key");
    LF_LOG_INFO("cache: verdicts are signed with key %s",
                lf_signer_key_id(run->signer));
  }
  path = option_or_env(o->trusted_keys, LF_TRUSTED_KEYS_ENV);
  if (path) {
    lf_status_t st = lf_keyring_load(path, &run->trusted);
    if (st)
      return lf_status_annotate(st, "trusted-keys");
  }
  const char *url = option_or_env(o->remote_cache, LF_REMOTE_URL_ENV);
  if (url && o->offline) {
    LF_LOG_INFO("cache: offline: the remote cache is not asked");
    url = NULL;
  }
  if (url) {
    lf_remote_options_t ro;
    lf_remote_options_init(&ro);
    ro.url = url;
    ro.timeout_ms = (long)(o->remote_timeout * 1000.0);
    lf_status_t st = lf_remote_open(&ro, &run->remote);
    if (st)
      return lf_status_annotate(st, "remote-cache");
    LF_LOG_INFO("cache: remote store %s (%zu trusted key(s)%s)",
                lf_remote_display_url(run->remote),
                lf_keyring_size(run->trusted),
                o->remote_push ? ", pushing" : "");
  }
  return LF_OK;
}

static lf_status_t open_cache(fuse_run_t *run) {
  const char *dir = run->o->cache_dir;
  lf_strbuf_t def;
  lf_strbuf_init(&def, 4096);
  if (!dir[0]) {
    lf_status_t st = lf_cache_default_dir(&def);
    if (st) {
      lf_strbuf_free(&def);
      return st;
    }
    dir = lf_strbuf_cstr(&def);
  }
  lf_status_t st = open_cache_peers(run);
  if (st)
    run->cache_setup_error = strdup("peers");
  if (!st) {
    lf_cache_options_t co;
    lf_cache_options_init(&co);
    co.api_key_env = run->o->api_key_env;
    co.signer = run->signer;
    co.trusted = run->trusted;
    co.require_signed = run->o->require_signed;
    co.remote = run->remote;
    co.push = run->o->remote_push;
    st = lf_cache_open(dir, &co, &run->cache);
  }
  lf_strbuf_free(&def);
  return st;
}

static void probe_gpu(fuse_run_t *run);

/* The kernel the compiler writes itself for each elementwise subgraph
 * (passes/synth_ew.h): the acquire loop's answer when the replay set and
 * the pattern table have none. MLIR work, before the loop threads start. */
static void synthesize(fuse_run_t *run) {
  for (size_t i = 0; i < run->num_subs; ++i) {
    subgraph_t *sg = &run->subs[i];
    if (strcmp(sg->cls, "elementwise"))
      continue;
    lf_synth_ew_t k;
    char note[700];
    lf_status_t st = lf_synth_ew(sg->func, NULL, &k);
    if (st) {
      snprintf(note, sizeof(note), "refused: %s", lf_status_message(st));
      lf_status_free(st);
    } else {
      snprintf(note, sizeof(note),
               "vector width %d, %zu generic(s) fused, grid %lld x %d",
               k.vector_width, k.generics, k.grid, LF_SYNTH_EW_BLOCK);
      sg->synth_text = k.text;
      k.text = NULL;
      lf_synth_ew_clear(&k);
    }
    LF_LOG_INFO("synth: %s: %s", sg->name, note);
    sg->synth_note = strdup(note);
  }
}

/* Fills each subgraph's candidate: sg->build (OK or the last failure),
 * sg->provider, sg->attempts, sg->attempt_log, or a reason. */
static lf_status_t acquire_stage(fuse_run_t *run) {
  const lf_fuse_options_t *o = run->o;
  if (run->num_subs == 0)
    return LF_OK;
  lf_acquire_options_t ao;
  lf_acquire_options_init(&ao);
  LF_RETURN_IF_ERROR(lf_acquire_provider_parse(o->provider, &ao.provider));
  ao.client.base_url = o->endpoint;
  ao.client.api_key_env = o->api_key_env;
  ao.model = o->model;
  ao.replay_dir = o->replay_dir[0] ? o->replay_dir : NULL;
  ao.record_dir = o->record_dir[0] ? o->record_dir : NULL;
  ao.offline = o->offline;
  ao.max_attempts = (int)o->max_attempts;
  ao.max_concurrency = (int)o->max_concurrency;
  ao.build_concurrency = 2;
  ao.no_build_ahead = !o->build_ahead;
  ao.max_requests = (long)o->max_requests;
  ao.max_tokens = (long)o->max_tokens;
  ao.max_wall_ms = (long)(o->max_seconds * 1000.0);
  ao.max_refinements = (int)o->max_refinements;
  ao.client.total_timeout_ms = (long)(o->http_timeout * 1000.0);
  ao.client.stream = o->stream;
  ao.toolchain = lf_build_toolchain();
  if (ao.provider != LF_PROVIDER_NONE) {
    lf_status_t st = open_cache(run);
    if (st && run->cache_setup_error)
      return st; /* a key file or URL the user named is unusable */
    if (st) {
      char buf[512];
      LF_LOG_WARN("kernel cache unavailable, continuing without it: %s",
                  lf_status_format(st, buf, sizeof(buf)));
      lf_status_free(st);
    }
  }
  ao.cache = run->cache;
  if (ao.provider != LF_PROVIDER_NONE && strcmp(o->pattern_table, "none")) {
    lf_strbuf_t td;
    lf_strbuf_init(&td, 4096);
    lf_status_t st = o->pattern_table[0]
                         ? lf_strbuf_append_str(&td, o->pattern_table)
                         : lf_table_default_dir(&td);
    if (!st)
      st = lf_table_open(lf_strbuf_cstr(&td), &run->table);
    /* The table grown from verified model templates lives with the cache
     * (and is read after the shipped one). */
    if (!st && run->cache) {
      snprintf(run->grow_dir, sizeof(run->grow_dir), "%s/table",
               lf_cache_dir(run->cache));
      /* As for the cache's own verdicts: the local folder is trusted as
       * the disk is, unless require-signed asks for a trusted signature. */
      if (run->o->require_signed)
        lf_table_set_trust(run->table, run->trusted, true);
      st = lf_table_add_dir(run->table, run->grow_dir);
      ao.table_grow_dir = run->grow_dir;
      ao.table_signer = run->signer;
    }
    if (st) {
      lf_strbuf_free(&td);
      return lf_status_annotate(st, "pattern-table");
    }
    LF_LOG_INFO("pattern table: %zu template(s) from %s%s%s%s",
                lf_table_size(run->table), lf_strbuf_cstr(&td),
                run->grow_dir[0] ? " and " : "", run->grow_dir,
                lf_table_skipped(run->table) ? " (some skipped: see above)"
                                             : "");
    lf_strbuf_free(&td);
    ao.table = run->table;
  }

  if (o->synth && ao.provider != LF_PROVIDER_NONE)
    synthesize(run);
  lf_acquire_task_t *tasks = calloc(run->num_subs, sizeof(*tasks));
  if (!tasks)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < run->num_subs; ++i) {
    subgraph_t *sg = &run->subs[i];
    group_pattern(run, sg);
    tasks[i] = (lf_acquire_task_t){.name = sg->name,
                                   .fingerprint = sg->fingerprint,
                                   .klass = sg->cls,
                                   .ir = sg->prompt_text,
                                   .signature = sg->signature,
                                   .arch = o->arch,
                                   .pattern = sg->pattern[0] ? sg->pattern
                                                             : NULL,
                                   .pattern_sizes = sg->pattern_sizes,
                                   .num_pattern_sizes = sg->num_pattern_sizes,
                                   .precision = sg->tf32_k ? "tf32" : NULL,
                                   .tf32_k = sg->tf32_k,
                                   .synth_kernel = sg->synth_text,
                                   .synth_source = LF_SYNTH_EW_VERSION};
  }
  build_ctx_t ctx = {.run = run, .tasks = tasks};
  ao.build = build_cb;
  ao.build_user = &ctx;
  ao.release = release_cb;
  /* With a GPU here (verify=auto), every candidate is verified and timed
   * inside its subgraph's loop, so failures and speed go back to the
   * model. */
  if (!run->gpu_status && strcmp(o->verify, "auto") == 0) {
    snprintf(run->stage_root, sizeof(run->stage_root),
             "/tmp/llm-fuse-verify.XXXXXX");
    if (!mkdtemp(run->stage_root)) {
      free(tasks);
      return LF_STATUS(LF_STATUS_UNAVAILABLE,
                       "cannot create a staging folder under /tmp");
    }
    run->staged = true;
    ao.evaluate = eval_cb;
    ao.evaluate_user = &ctx;
    ctx.evaluating = true;
  }
  lf_acquire_report_t *rep = NULL;
  double t0 = now_ms();
  lf_status_t st = lf_acquire_run(tasks, run->num_subs, &ao, &rep);
  double elapsed = now_ms() - t0;
  if (st) {
    free(tasks);
    return lf_status_annotate(st, "kernel acquisition");
  }
  snprintf(run->prompt_version, sizeof(run->prompt_version), "%s",
           rep->prompt_version);

  for (size_t i = 0; i < run->num_subs; ++i) {
    subgraph_t *sg = &run->subs[i];
    lf_acquire_result_t *r = &rep->results[i];
    sg->ms_acquire = (double)r->elapsed_ms;
    sg->attempts = (int)r->attempt_count;
    sg->requests = r->requests;
    sg->refinements = r->refinements;
    sg->candidates = r->candidates;
    /* The kept candidate's build; else the last failure, for the report. */
    if (r->artifact) {
      lf_build_result_destroy(sg->build);
      sg->build = r->artifact;
      r->artifact = NULL;
    } else if (sg->failed_build && !sg->build) {
      sg->build = sg->failed_build;
      sg->failed_build = NULL;
    }
    if (r->evaluated)
      take_eval(sg, &r->eval);
    sg->acquire_outcome = r->outcome;
    free(sg->provider);
    sg->provider = r->provider && r->provider[0] ? strdup(r->provider) : NULL;
    free(sg->model);
    sg->model = r->model && r->model[0] ? strdup(r->model) : NULL;
    snprintf(sg->cache_digest, sizeof(sg->cache_digest), "%s", r->cache_digest);
    sg->attempt_log = cJSON_CreateArray();
    for (size_t a = 0; a < r->attempt_count && sg->attempt_log; ++a) {
      const lf_acquire_attempt_t *at = &r->attempts[a];
      cJSON *ja = cJSON_CreateObject();
      cJSON_AddBoolToObject(ja, "repair", at->repair);
      cJSON_AddStringToObject(ja, "kind",
                              lf_acquire_request_kind_name(at->kind));
      cJSON_AddNumberToObject(ja, "request", at->request);
      cJSON_AddStringToObject(ja, "variant", at->variant ? at->variant : "");
      cJSON_AddStringToObject(ja, "stage", lf_acquire_attempt_stage(at));
      cJSON_AddStringToObject(ja, "outcome",
                              lf_acquire_attempt_outcome_name(at->outcome));
      cJSON_AddNumberToObject(ja, "latency_ms", (double)at->latency_ms);
      cJSON_AddNumberToObject(ja, "build_ms", (double)at->build_ms);
      cJSON_AddNumberToObject(ja, "verify_ms", (double)at->verify_ms);
      cJSON_AddNumberToObject(ja, "gpu_queue_ms", (double)at->queue_ms);
      cJSON_AddNumberToObject(ja, "prompt_tokens", (double)at->prompt_tokens);
      cJSON_AddNumberToObject(ja, "completion_tokens",
                              (double)at->completion_tokens);
      cJSON_AddStringToObject(ja, "message", at->message ? at->message : "");
      cJSON_AddStringToObject(ja, "verify_reason",
                              at->verify_reason ? at->verify_reason : "");
      if (at->time_ms > 0)
        cJSON_AddNumberToObject(ja, "time_ms", at->time_ms);
      else
        cJSON_AddNullToObject(ja, "time_ms");
      if (at->roofline_fraction > 0)
        cJSON_AddNumberToObject(ja, "roofline_fraction", at->roofline_fraction);
      else
        cJSON_AddNullToObject(ja, "roofline_fraction");
      cJSON_AddStringToObject(ja, "feedback", at->feedback ? at->feedback : "");
      cJSON_AddBoolToObject(ja, "kept", at->kept);
      cJSON_AddStringToObject(ja, "provider", at->provider ? at->provider : "");
      cJSON_AddStringToObject(ja, "model", at->model ? at->model : "");
      cJSON_AddItemToArray(sg->attempt_log, ja);
    }
    switch (r->outcome) {
    case LF_ACQUIRE_OK:
      break; /* sg->build holds the success */
    case LF_ACQUIRE_REJECTED:
      break; /* decided with the verification below */
    case LF_ACQUIRE_CACHED: {
      lf_build_result_t *b = NULL;
      lf_status_t cs = build_from_cache(r->cache_entry, &b);
      if (cs) {
        char buf[512];
        set_reason(sg, "cache-unusable", "the cached kernel cannot be used: %s",
                   lf_status_format(cs, buf, sizeof(buf)));
        lf_status_free(cs);
        break;
      }
      lf_build_result_destroy(sg->build);
      sg->build = b;
      sg->cached_verdict = r->cache_entry->verdict;
      sg->cache_trust = r->cache_entry->trust;
      sg->cache_from_remote = r->cache_entry->from_remote;
      sg->cache_note = strdup(r->cache_entry->trust_note);
      if (r->cache_entry->trust == LF_CACHE_TRUST_DEMOTED)
        LF_LOG_WARN("%s: cache entry %.12s: %s", sg->name, sg->cache_digest,
                    r->cache_entry->trust_note);
      if (r->cache_entry->verification_json)
        sg->verification = cJSON_Parse(r->cache_entry->verification_json);
      sg->kernel_text = strdup(r->cache_entry->kernel);
      break;
    }
    case LF_ACQUIRE_CACHED_REJECTED:
      set_reason(sg, "cached-rejected",
                 "the cache records that this subgraph's kernel failed "
                 "verification; nothing was asked");
      break;
    case LF_ACQUIRE_SKIPPED:
      set_reason(sg, "no-provider",
                 "provider=none: no candidate kernel was asked for");
      break;
    case LF_ACQUIRE_BUDGET:
      set_reason(sg, "budget-exhausted",
                 "the module's %s budget ran out before a kernel built",
                 lf_acquire_budget_name(r->budget));
      break;
    case LF_ACQUIRE_FAILED:
      set_reason(
          sg, "build-failed",
          "no candidate built in %d attempt(s); last: %s: %s", sg->attempts,
          sg->build ? lf_build_kind_name(sg->build->kind) : "?",
          sg->build && sg->build->message ? sg->build->message : r->message);
      break;
    case LF_ACQUIRE_UNAVAILABLE:
      set_reason(sg, "no-candidate", "the provider gave no kernel: %s",
                 r->message);
      break;
    default:
      set_reason(sg, "acquire-error", "kernel acquisition failed: %s",
                 r->message);
      break;
    }
    if (r->kernel && !sg->kernel_text)
      sg->kernel_text = strdup(r->kernel);
  }
  LF_LOG_INFO("acquired kernels for %zu subgraph(s) in %.0f ms: %ld "
              "request(s), %ld+%ld token(s), %d round(s)%s%s",
              run->num_subs, elapsed, rep->requests, rep->prompt_tokens,
              rep->completion_tokens, rep->rounds,
              rep->exhausted ? "; budget exhausted: " : "",
              rep->exhausted ? lf_acquire_budget_name(rep->exhausted) : "");
  lf_acquire_report_destroy(rep);
  free(tasks);
  return LF_OK;
}

/* ---- Stage 3: can verification run here? ---- */

/* Sets run->gpu_status to why verification cannot run, or leaves it NULL
 * when a usable GPU is present. The driver is only probed here; candidates
 * never run in the compiler's process. */
static void probe_gpu(fuse_run_t *run) {
  if (strcmp(run->o->verify, "none") == 0) {
    run->gpu_status = strdup("verify=none: candidates are never swapped in");
    return;
  }
  lf_cuda_driver_t *driver = NULL;
  lf_status_t st = lf_cuda_driver_load(&driver);
  int count = 0;
  if (!st)
    st = lf_cuda_device_count(driver, &count);
  if (!st && count == 0)
    st = LF_STATUS(LF_STATUS_UNAVAILABLE, "the CUDA driver sees no GPU");
  lf_cuda_driver_unload(driver);
  if (st) {
    char buf[512];
    const char *msg = lf_status_message(st);
    snprintf(buf, sizeof(buf), "%s", msg ? msg : "no usable GPU");
    run->gpu_status = strdup(buf);
    lf_status_free(st);
  }
}

/* ---- Stage 3 and 4: verify, then swap. ---- */

/* Records what is known of `sg`'s kernel in the cache under the key the
 * acquire loop used: the verdict, and a verification record carrying the
 * build metadata (launch geometry, parameters) so that a later cache hit
 * can be swapped without building again. */
static void cache_record(fuse_run_t *run, subgraph_t *sg,
                         lf_cache_verdict_t verdict) {
  if (!run->cache || !sg->kernel_text || !sg->build ||
      sg->build->kind != LF_BUILD_OK)
    return;
  char *text = record_json(sg->build, verdict, sg->verification);
  lf_cache_key_t key = {sg->fingerprint,
                        run->o->arch,
                        lf_build_toolchain(),
                        run->o->provider,
                        run->o->model,
                        run->prompt_version,
                        sg->tf32_k ? "tf32" : NULL};
  lf_cache_entry_t e = {0};
  e.kernel = sg->kernel_text;
  e.ptx = sg->build->ptx;
  e.cubin = sg->build->cubin;
  e.cubin_len = sg->build->cubin ? sg->build->cubin_size : 0;
  e.verdict = verdict;
  e.verification_json = text;
  e.provenance.provider = sg->provider;
  e.provenance.model = sg->model;
  e.provenance.attempts = sg->attempts;
  lf_status_t st =
      text ? lf_cache_store(run->cache, &key, &e, NULL)
           : LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  if (st)
    lf_log_status(LF_LOG_WARN, "cache: cannot record the verdict", st);
  cJSON_free(text);
}

static void swap_stage(fuse_run_t *run, subgraph_t *sg, const char *how) {
  char buf[1024];
  lf_status_t st = lf_swap_in(run->module, sg->func, sg->build);
  if (st) {
    set_reason(sg, "swap-failed",
               "the verified kernel could not be swapped in: %s",
               lf_status_format(st, buf, sizeof(buf)));
    lf_status_free(st);
    return;
  }
  sg->swapped = true;
  set_reason(sg, "swapped", "%s", how);
}

/* verify=defer without a GPU: the candidate and the original ops behind a
 * guard that verifies on the first call on the real GPU (passes/defer.h). */
static void defer_stage(fuse_run_t *run, subgraph_t *sg, size_t i, size_t n) {
  const lf_fuse_options_t *o = run->o;
  lf_defer_options_t d = {0};
  d.chip = o->arch;
  d.record_path = o->guard_record;
  d.min_speedup = o->min_speedup;
  d.flops = sg->flops;
  d.lenient_nonfinite = strcmp(sg->cls, "attention-like") == 0;
  d.keep_temps = o->keep_temps;
  d.tf32_k = sg->tf32_k;
  double t0 = now_ms();
  lf_status_t st =
      lf_defer_stage_and_guard(run->module, sg->func, sg->build, &d);
  sg->ms_verify = now_ms() - t0;
  if (st) {
    char buf[1024];
    set_reason(sg, "defer-failed",
               "the deferred-verification guard could not be built (%s); "
               "the original ops stay",
               lf_status_format(st, buf, sizeof(buf)));
    lf_status_free(st);
    return;
  }
  sg->deferred = true;
  set_reason(sg, "deferred",
             "no GPU here (%s): kernel %s and the original ops are both "
             "embedded behind a guard that verifies the kernel on the first "
             "call on the GPU and then uses it, or the original ops, for good",
             run->gpu_status, sg->build->kernel_name);
  LF_LOG_INFO("[%zu/%zu] %s: deferred: guard embedded in %.0f ms", i + 1, n,
              sg->name, sg->ms_verify);
}

static double roofline_fraction(const subgraph_t *sg) {
  return lf_acquire_eval_fraction(&sg->eval);
}

/* The speed gate, then the swap: min-speedup over the fallback and
 * min-roofline (a fraction of the roofline floor). */
static void gate_and_swap(fuse_run_t *run, subgraph_t *sg, const char *how) {
  const lf_fuse_options_t *o = run->o;
  if (sg->speedup > 0 && sg->speedup < o->min_speedup) {
    set_reason(sg, "slower",
               "verified, but %.2fx the fallback (%.4g ms against %.4g ms), "
               "below min-speedup %.2f",
               sg->speedup, sg->eval.time_ms, sg->eval.fallback_ms,
               o->min_speedup);
    return;
  }
  double f = roofline_fraction(sg);
  if (o->min_roofline > 0 && f < o->min_roofline) {
    if (f > 0)
      set_reason(sg, "below-roofline",
                 "verified, but at %.1f%% of the roofline floor (%.4g ms "
                 "against %.4g ms), below min-roofline %.2f",
                 100 * f, sg->eval.time_ms, sg->eval.roofline_ms,
                 o->min_roofline);
    else
      set_reason(sg, "below-roofline",
                 "verified, but its roofline fraction is unknown and "
                 "min-roofline is %.2f",
                 o->min_roofline);
    return;
  }
  swap_stage(run, sg, how);
}

/* The decision for a subgraph whose kept candidate was verified here (by
 * its loop, or once for an unverified cache entry): the reason when it was
 * not judged or rejected (recorded in the cache), else the speed gate. */
static void decide_evaluated(fuse_run_t *run, subgraph_t *sg) {
  const lf_acquire_eval_t *e = &sg->eval;
  const char *why = e->feedback ? e->feedback : "";
  if (e->unjudged) {
    set_reason(sg, e->reason ? e->reason : "verify-error", "%s", why);
    return;
  }
  char how[256];
  if (sg->requests > 0)
    snprintf(how, sizeof(how), "%d candidate(s) in %d request(s)",
             sg->candidates, sg->requests);
  else
    snprintf(how, sizeof(how), "the cached candidate");
  if (!e->accepted) {
    set_reason(sg, "rejected",
               "verification rejected %s; the last (%s): %.600s", how,
               e->reason ? e->reason : "?", why);
    cache_record(run, sg, LF_CACHE_REJECTED);
    return;
  }
  cache_record(run, sg, LF_CACHE_VERIFIED);
  char swapped[400];
  snprintf(swapped, sizeof(swapped),
           "verified; the fastest of %s (%d refinement(s)); not slower than "
           "the fallback",
           how, sg->refinements);
  gate_and_swap(run, sg, swapped);
}

/* Applies what each subgraph's loop found (verified, rejected, not judged)
 * and, for the kernels the loops did not verify, the cache's verdict, a
 * single verification (an unverified cache entry), or the no-GPU paths. */
static lf_status_t verify_stage(fuse_run_t *run) {
  const lf_fuse_options_t *o = run->o;
  size_t n = run->num_subs;
  for (size_t i = 0; i < n; ++i) {
    subgraph_t *sg = &run->subs[i];
    if (sg->evaluated) {
      decide_evaluated(run, sg);
      continue;
    }
    if (!sg->build || sg->build->kind != LF_BUILD_OK || sg->reason_word)
      continue; /* no candidate: the reason is set */
    /* A kernel the cache records as verified (for this arch and
     * toolchain) is swapped as it is: the cache is the lockfile. */
    if (sg->acquire_outcome == LF_ACQUIRE_CACHED &&
        sg->cached_verdict == LF_CACHE_VERIFIED) {
      const cJSON *vd =
          sg->verification
              ? cJSON_GetObjectItemCaseSensitive(sg->verification, "verdict")
              : NULL;
      eval_timing(vd, &sg->eval);
      if (sg->eval.time_ms > 0)
        sg->speedup = sg->eval.fallback_ms / sg->eval.time_ms;
      const cJSON *sp =
          vd ? cJSON_GetObjectItemCaseSensitive(vd, "speedup") : NULL;
      if (cJSON_IsNumber(sp))
        sg->speedup = sp->valuedouble;
      LF_LOG_INFO("[%zu/%zu] %s: verified earlier (cache)", i + 1, n, sg->name);
      gate_and_swap(run, sg,
                    "verified earlier (the cache records the verdict for this "
                    "arch and toolchain); not slower than the fallback");
      continue;
    }
    if (run->gpu_status && strcmp(o->verify, "defer") == 0) {
      defer_stage(run, sg, i, n);
      continue;
    }
    if (run->gpu_status) {
      if (strcmp(o->verify, "none") == 0)
        set_reason(sg, "verify-disabled", "%s", run->gpu_status);
      else
        set_reason(sg, "no-gpu",
                   "verification could not run (%s); verify=auto keeps the "
                   "original ops without a GPU",
                   run->gpu_status);
      continue;
    }
    /* A cached kernel nobody verified yet (built on a machine without a
     * GPU): verified once, here. */
    if (!run->staged) {
      snprintf(run->stage_root, sizeof(run->stage_root),
               "/tmp/llm-fuse-verify.XXXXXX");
      if (!mkdtemp(run->stage_root))
        return LF_STATUS(LF_STATUS_UNAVAILABLE,
                         "cannot create a staging folder under /tmp");
      run->staged = true;
    }
    LF_LOG_INFO("[%zu/%zu] %s (%s): verifying kernel %s on the GPU", i + 1, n,
                sg->name, sg->cls, sg->build->kernel_name);
    lf_acquire_eval_t ev;
    memset(&ev, 0, sizeof(ev));
    double t0 = now_ms();
    verify_build(run, sg, sg->build, &ev);
    sg->ms_verify += now_ms() - t0;
    take_eval(sg, &ev);
    decide_evaluated(run, sg);
    LF_LOG_INFO("[%zu/%zu] %s: %s in %.0f ms", i + 1, n, sg->name,
                sg->swapped ? "swapped" : sg->reason_word, sg->ms_verify);
  }
  return LF_OK;
}

/* ---- Reporting. ---- */

static const char *decision_word(const subgraph_t *sg) {
  return sg->swapped ? "swapped" : sg->deferred ? "deferred" : "kept";
}

/* Whether the kept kernel of a TF32-mode subgraph uses TF32 instructions
 * (mma/wgmma on .tf32 operands, cvt to .tf32), by its PTX: 1 yes, 0 no, -1
 * unknown (no kernel, or a cubin without PTX). */
static int kernel_uses_tf32(const subgraph_t *sg) {
  if (!sg->build || sg->build->kind != LF_BUILD_OK || !sg->build->ptx)
    return -1;
  return strstr(sg->build->ptx, ".tf32") != NULL;
}

/* A TF32-mode subgraph whose kernel is in use (swapped or deferred). */
static bool used_tf32(const subgraph_t *sg) {
  return sg->tf32_k > 0 && (sg->swapped || sg->deferred);
}

static cJSON *subgraph_json(const subgraph_t *sg) {
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  cJSON_AddStringToObject(j, "name", sg->name);
  cJSON_AddStringToObject(j, "fingerprint", sg->fingerprint);
  cJSON_AddStringToObject(j, "class", sg->cls);
  cJSON_AddStringToObject(j, "signature", sg->signature);
  cJSON_AddStringToObject(j, "decision", decision_word(sg));
  cJSON_AddStringToObject(j, "reason", sg->reason_word ? sg->reason_word : "");
  cJSON_AddStringToObject(j, "detail", sg->reason ? sg->reason : "");
  if (sg->provider)
    cJSON_AddStringToObject(j, "provider", sg->provider);
  else
    cJSON_AddNullToObject(j, "provider");
  cJSON_AddNumberToObject(j, "attempts", sg->attempts);
  cJSON_AddNumberToObject(j, "requests", sg->requests);
  cJSON_AddNumberToObject(j, "refinements", sg->refinements);
  cJSON_AddNumberToObject(j, "candidates", sg->candidates);
  cJSON *perf = cJSON_AddObjectToObject(j, "performance");
  if (sg->eval.time_ms > 0) {
    cJSON_AddNumberToObject(perf, "kernel_ms", sg->eval.time_ms);
    cJSON_AddNumberToObject(perf, "fallback_ms", sg->eval.fallback_ms);
  } else {
    cJSON_AddNullToObject(perf, "kernel_ms");
    cJSON_AddNullToObject(perf, "fallback_ms");
  }
  if (sg->eval.roofline_ms > 0)
    cJSON_AddNumberToObject(perf, "roofline_ms", sg->eval.roofline_ms);
  else
    cJSON_AddNullToObject(perf, "roofline_ms");
  if (roofline_fraction(sg) > 0)
    cJSON_AddNumberToObject(perf, "roofline_fraction", roofline_fraction(sg));
  else
    cJSON_AddNullToObject(perf, "roofline_fraction");
  if (sg->attempt_log)
    cJSON_AddItemToObject(j, "attempt_log",
                          cJSON_Duplicate(sg->attempt_log, true));
  const lf_build_result_t *b = sg->build;
  if (b) {
    cJSON *jb = cJSON_AddObjectToObject(j, "build");
    cJSON_AddStringToObject(jb, "kind", lf_build_kind_name(b->kind));
    cJSON_AddStringToObject(jb, "message", b->message ? b->message : "");
    if (b->kernel_name)
      cJSON_AddStringToObject(jb, "kernel", b->kernel_name);
    if (b->chip)
      cJSON_AddStringToObject(jb, "chip", b->chip);
    if (b->kind == LF_BUILD_OK) {
      cJSON *grid = cJSON_AddArrayToObject(jb, "grid");
      cJSON *block = cJSON_AddArrayToObject(jb, "block");
      for (int d = 0; d < 3; ++d) {
        cJSON_AddItemToArray(grid, cJSON_CreateNumber(b->grid[d]));
        cJSON_AddItemToArray(block, cJSON_CreateNumber(b->block[d]));
      }
      cJSON_AddNumberToObject(jb, "dynamic_shared_memory",
                              b->dynamic_shared_bytes);
      cJSON_AddNumberToObject(jb, "ptx_bytes", (double)b->ptx_size);
      cJSON_AddNumberToObject(jb, "cubin_bytes", (double)b->cubin_size);
      if (b->ptxas_info)
        cJSON_AddStringToObject(jb, "ptxas", b->ptxas_info);
    }
  } else {
    cJSON_AddNullToObject(j, "build");
  }
  if (sg->model)
    cJSON_AddStringToObject(j, "model", sg->model);
  if (sg->synth_note)
    cJSON_AddStringToObject(j, "synth", sg->synth_note);
  cJSON_AddStringToObject(j, "acquire",
                          lf_acquire_outcome_name(sg->acquire_outcome));
  if (sg->cache_digest[0])
    cJSON_AddStringToObject(j, "cache_key", sg->cache_digest);
  if (sg->acquire_outcome == LF_ACQUIRE_CACHED ||
      sg->acquire_outcome == LF_ACQUIRE_CACHED_REJECTED) {
    cJSON *c = cJSON_AddObjectToObject(j, "cache");
    cJSON_AddStringToObject(c, "trust", lf_cache_trust_name(sg->cache_trust));
    cJSON_AddBoolToObject(c, "from_remote", sg->cache_from_remote);
    cJSON_AddStringToObject(c, "note", sg->cache_note ? sg->cache_note : "");
  }
  if (sg->verification)
    cJSON_AddItemToObject(j, "verification",
                          cJSON_Duplicate(sg->verification, true));
  else
    cJSON_AddNullToObject(j, "verification");
  cJSON_AddNumberToObject(j, "flops", sg->flops);
  if (sg->tf32_k > 0) {
    /* TF32 mode: only subgraphs with an f32 contraction get the member. */
    cJSON *p = cJSON_AddObjectToObject(j, "precision");
    cJSON_AddStringToObject(p, "mode", "tf32");
    cJSON_AddNumberToObject(p, "k", (double)sg->tf32_k);
    cJSON_AddNumberToObject(p, "tolerance",
                            lf_vtolerance_tf32(sg->tf32_k).rtol);
    int uses = kernel_uses_tf32(sg);
    if (uses < 0)
      cJSON_AddNullToObject(p, "tf32_instructions");
    else
      cJSON_AddBoolToObject(p, "tf32_instructions", uses);
    cJSON_AddBoolToObject(p, "in_use", used_tf32(sg));
  }
  cJSON *t = cJSON_AddObjectToObject(j, "ms");
  cJSON_AddNumberToObject(t, "acquire", sg->ms_acquire);
  cJSON_AddNumberToObject(t, "build", sg->ms_build);
  cJSON_AddNumberToObject(t, "verify", sg->ms_verify);
  if (sg->speedup > 0)
    cJSON_AddNumberToObject(j, "speedup", sg->speedup);
  else
    cJSON_AddNullToObject(j, "speedup");
  return j;
}

static cJSON *options_json(const lf_fuse_options_t *o) {
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  /* The API key is never an option; only the variable's name is recorded. */
  cJSON_AddStringToObject(j, "provider", o->provider);
  cJSON_AddStringToObject(j, "endpoint", o->endpoint);
  cJSON_AddStringToObject(j, "model", o->model);
  cJSON_AddStringToObject(j, "api_key_env", o->api_key_env);
  cJSON_AddStringToObject(j, "replay_dir", o->replay_dir);
  cJSON_AddStringToObject(j, "cache_dir", o->cache_dir);
  cJSON_AddBoolToObject(j, "offline", o->offline);
  cJSON_AddStringToObject(j, "arch", o->arch);
  cJSON_AddStringToObject(j, "verify", o->verify);
  cJSON_AddNumberToObject(j, "min_speedup", o->min_speedup);
  cJSON_AddNumberToObject(j, "max_attempts", (double)o->max_attempts);
  cJSON_AddNumberToObject(j, "max_concurrency", (double)o->max_concurrency);
  cJSON_AddBoolToObject(j, "build_ahead", o->build_ahead);
  cJSON_AddNumberToObject(j, "max_refinements", (double)o->max_refinements);
  cJSON_AddNumberToObject(j, "min_roofline", o->min_roofline);
  cJSON_AddNumberToObject(j, "http_timeout", o->http_timeout);
  cJSON_AddBoolToObject(j, "stream", o->stream);
  /* Key files are named, never read into the report. */
  cJSON_AddStringToObject(j, "signing_key", o->signing_key);
  cJSON_AddStringToObject(j, "trusted_keys", o->trusted_keys);
  cJSON_AddBoolToObject(j, "require_signed", o->require_signed);
  cJSON_AddNumberToObject(j, "remote_timeout", o->remote_timeout);
  cJSON_AddBoolToObject(j, "remote_push", o->remote_push);
  cJSON_AddBoolToObject(j, "tf32", o->tf32);
  return j;
}

/* The shared cache's part of the report: the store (URL without its
 * credentials), what it served and what was refused, with reasons. */
static cJSON *remote_json(const fuse_run_t *run) {
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  if (run->signer)
    cJSON_AddStringToObject(j, "signing_key_id", lf_signer_key_id(run->signer));
  else
    cJSON_AddNullToObject(j, "signing_key_id");
  cJSON_AddNumberToObject(j, "trusted_keys",
                          (double)lf_keyring_size(run->trusted));
  if (!run->remote) {
    cJSON_AddNullToObject(j, "remote");
    return j;
  }
  cJSON_AddStringToObject(j, "remote", lf_remote_display_url(run->remote));
  lf_remote_stats_t rs = lf_remote_stats(run->remote);
  cJSON *r = cJSON_AddObjectToObject(j, "requests");
  cJSON_AddNumberToObject(r, "get", (double)rs.gets);
  cJSON_AddNumberToObject(r, "put", (double)rs.puts);
  cJSON_AddNumberToObject(r, "head", (double)rs.heads);
  cJSON_AddNumberToObject(r, "hits", (double)rs.hits);
  cJSON_AddNumberToObject(r, "misses", (double)rs.misses);
  cJSON_AddNumberToObject(r, "failures", (double)rs.failures);
  cJSON_AddNumberToObject(r, "bytes_in", (double)rs.bytes_in);
  cJSON_AddNumberToObject(r, "bytes_out", (double)rs.bytes_out);
  cJSON_AddNumberToObject(r, "ms", rs.ms);
  const char *down = lf_remote_down_reason(run->remote);
  if (down[0])
    cJSON_AddStringToObject(j, "down", down);
  else
    cJSON_AddNullToObject(j, "down");
  if (run->cache) {
    lf_cache_remote_counts_t c = lf_cache_remote_counts(run->cache);
    cJSON_AddNumberToObject(j, "fetched", (double)c.fetched);
    cJSON_AddNumberToObject(j, "demoted", (double)c.demoted);
    cJSON_AddNumberToObject(j, "push_failures", (double)c.push_failures);
    cJSON_AddNumberToObject(j, "push_skipped_unsigned",
                            (double)c.push_skipped);
    size_t n = 0, total = 0;
    const lf_cache_rejection_t *rej =
        lf_cache_remote_rejections(run->cache, &n, &total);
    cJSON *a = cJSON_AddArrayToObject(j, "rejected");
    for (size_t i = 0; i < n; ++i) {
      cJSON *x = cJSON_CreateObject();
      cJSON_AddStringToObject(x, "digest", rej[i].digest);
      cJSON_AddStringToObject(x, "reason", rej[i].reason);
      cJSON_AddItemToArray(a, x);
    }
    cJSON_AddNumberToObject(j, "rejected_total", (double)total);
  }
  return j;
}

static lf_status_t write_report(const fuse_run_t *run) {
  cJSON *root = cJSON_CreateObject();
  if (!root)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  cJSON_AddStringToObject(root, "schema", "llm-fuse-report/1");
  cJSON_AddItemToObject(root, "options", options_json(run->o));
  if (run->gpu_status)
    cJSON_AddStringToObject(root, "verification_unavailable", run->gpu_status);
  else
    cJSON_AddNullToObject(root, "verification_unavailable");
  cJSON_AddItemToObject(root, "shared_cache", remote_json(run));
  cJSON *subs = cJSON_AddArrayToObject(root, "subgraphs");
  size_t swapped = 0, deferred = 0;
  for (size_t i = 0; i < run->num_subs; ++i) {
    cJSON_AddItemToArray(subs, subgraph_json(&run->subs[i]));
    swapped += run->subs[i].swapped;
    deferred += run->subs[i].deferred;
  }
  /* The partition's view: one record per group (call sites included). */
  cJSON_AddItemToObject(root, "groups", cJSON_Duplicate(run->groups, true));
  cJSON *sum = cJSON_AddObjectToObject(root, "summary");
  cJSON_AddNumberToObject(sum, "subgraphs", (double)run->num_subs);
  cJSON_AddNumberToObject(sum, "swapped", (double)swapped);
  cJSON_AddNumberToObject(sum, "deferred", (double)deferred);
  cJSON_AddNumberToObject(sum, "kept",
                          (double)(run->num_subs - swapped - deferred));
  if (run->o->tf32) {
    /* The subgraphs compiled in TF32 mode whose kernel is in use. */
    cJSON *tf = cJSON_AddArrayToObject(sum, "tf32_subgraphs");
    for (size_t i = 0; i < run->num_subs; ++i)
      if (used_tf32(&run->subs[i]))
        cJSON_AddItemToArray(tf, cJSON_CreateString(run->subs[i].name));
  }
  cJSON_AddNumberToObject(sum, "ms_outline", run->ms_outline);
  cJSON_AddNumberToObject(sum, "ms_total", run->ms_total);
  lf_status_t st = lf_write_json_report(run->o->report, root);
  cJSON_Delete(root);
  return st;
}

static void emit_remarks(const fuse_run_t *run) {
  for (size_t i = 0; i < run->num_subs; ++i) {
    const subgraph_t *sg = &run->subs[i];
    char msg[1400];
    char roof[64] = "";
    if (roofline_fraction(sg) > 0)
      snprintf(roof, sizeof(roof), ", %.0f%% of the roofline",
               100 * roofline_fraction(sg));
    if (sg->swapped && sg->speedup > 0)
      snprintf(msg, sizeof(msg),
               "llm-fuse: @%s (%s): swapped in kernel %s from %s, verified, "
               "%.2fx the fallback%s",
               sg->name, sg->cls, sg->build->kernel_name,
               sg->provider ? sg->provider : "?", sg->speedup, roof);
    else if (sg->swapped)
      snprintf(msg, sizeof(msg), "llm-fuse: @%s (%s): swapped in kernel %s: %s",
               sg->name, sg->cls, sg->build->kernel_name, sg->reason);
    else if (sg->deferred)
      snprintf(msg, sizeof(msg), "llm-fuse: @%s (%s): deferred: %s", sg->name,
               sg->cls, sg->reason);
    else
      snprintf(msg, sizeof(msg), "llm-fuse: @%s (%s): kept original ops: %s",
               sg->name, sg->cls, sg->reason ? sg->reason : "no reason");
    if (sg->tf32_k > 0) {
      size_t len = strlen(msg);
      snprintf(msg + len, sizeof(msg) - len,
               " [tf32=1: TF32 allowed, K = %lld, verified with the TF32 "
               "tolerance %.3g]",
               (long long)sg->tf32_k, lf_vtolerance_tf32(sg->tf32_k).rtol);
    }
    lf_emit_diag(sg->loc, LF_DIAG_REMARK, msg);
  }
}

/* The table at the end, through the log (stderr, level info). */
static void print_summary(const fuse_run_t *run) {
  if (!lf_log_enabled(LF_LOG_INFO))
    return;
  size_t swapped = 0, deferred = 0;
  LF_LOG_INFO("summary: %-20s %-12s %-8s %8s %6s %10s %8s %8s  %s", "subgraph",
              "class", "decision", "attempts", "refine", "kernel ms", "speedup",
              "roofline", "reason");
  for (size_t i = 0; i < run->num_subs; ++i) {
    const subgraph_t *sg = &run->subs[i];
    char speed[32] = "-", kms[32] = "-", roof[32] = "-";
    if (sg->speedup > 0)
      snprintf(speed, sizeof(speed), "%.2fx", sg->speedup);
    if (sg->eval.time_ms > 0)
      snprintf(kms, sizeof(kms), "%.4g", sg->eval.time_ms);
    if (roofline_fraction(sg) > 0)
      snprintf(roof, sizeof(roof), "%.0f%%", 100 * roofline_fraction(sg));
    LF_LOG_INFO("summary: %-20s %-12s %-8s %8d %6d %10s %8s %8s  %s%s",
                sg->name, sg->cls, decision_word(sg), sg->attempts,
                sg->refinements, kms, speed, roof,
                sg->reason_word ? sg->reason_word : "",
                sg->tf32_k > 0 ? " (tf32)" : "");
    swapped += sg->swapped;
    deferred += sg->deferred;
  }
  if (run->o->tf32) {
    /* TF32 mode: which subgraphs use TF32 (their kernel is in use). */
    lf_strbuf_t names;
    lf_strbuf_init(&names, 1 << 16);
    size_t n = 0, allowed = 0;
    for (size_t i = 0; i < run->num_subs; ++i) {
      const subgraph_t *sg = &run->subs[i];
      allowed += sg->tf32_k > 0;
      if (!used_tf32(sg))
        continue;
      int uses = kernel_uses_tf32(sg);
      lf_status_free(lf_strbuf_appendf(
          &names, "%s%s (K = %lld, %s)", n++ ? ", " : "", sg->name,
          (long long)sg->tf32_k,
          uses > 0    ? "TF32 tensor cores"
          : uses == 0 ? "the kernel is exact f32"
                      : "instructions unknown"));
    }
    LF_LOG_INFO("summary: tf32=1: %zu f32 contraction subgraph(s), "
                "%zu use TF32%s%s",
                allowed, n, n ? ": " : "", lf_strbuf_cstr(&names));
    lf_strbuf_free(&names);
  }
  char dbuf[96] = "";
  if (deferred)
    snprintf(dbuf, sizeof(dbuf), " %zu deferred to a first-call check,",
             deferred);
  LF_LOG_INFO("summary: %zu subgraph(s), %zu swapped,%s %zu kept with their "
              "original ops; %.0f ms in all",
              run->num_subs, swapped, dbuf, run->num_subs - swapped - deferred,
              run->ms_total);
  if (run->remote) {
    lf_remote_stats_t rs = lf_remote_stats(run->remote);
    lf_cache_remote_counts_t c = run->cache ? lf_cache_remote_counts(run->cache)
                                            : (lf_cache_remote_counts_t){0};
    size_t nrej = 0, total = 0;
    if (run->cache)
      lf_cache_remote_rejections(run->cache, &nrej, &total);
    const char *down = lf_remote_down_reason(run->remote);
    LF_LOG_INFO("summary: remote cache %s: %ld GET (%ld hit), %ld PUT, %ld "
                "HEAD in %.0f ms; %ld entr%s used (%ld demoted to "
                "unverified), %zu refused%s%s",
                lf_remote_display_url(run->remote), rs.gets, rs.hits, rs.puts,
                rs.heads, rs.ms, c.fetched, c.fetched == 1 ? "y" : "ies",
                c.demoted, total, down[0] ? "; down: " : "", down);
  }
  if (run->gpu_status && swapped == 0 && deferred == 0 && run->num_subs)
    LF_LOG_INFO("summary: verification could not run (%s); nothing was "
                "swapped in",
                run->gpu_status);
}

/* ---- The pass. ---- */

static const char *fuse_pre_pipeline(MlirOperation op, const void *options) {
  (void)options;
  return lf_tosa_import_pipeline(op);
}

static lf_status_t run_llm_fuse(MlirOperation module, const void *options) {
  const lf_fuse_options_t *o = options;
  fuse_run_t run = {.o = o, .module = module};
  pthread_mutex_init(&run.mlir_lock, NULL);
  pthread_mutex_init(&run.gpu_lock, NULL);
  lf_status_t st = LF_OK;
  double t0 = now_ms();

  /* 1. Partition and outline. */
  run.groups = cJSON_CreateArray();
  if (!run.groups)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  lf_outline_options_t oopts = {.max_group_ops = 32, .remarks = o->remarks};
  size_t outlined = 0;
  if ((st = lf_outline_module(module, &oopts, run.groups, &outlined)))
    goto out;
  if ((st = collect_subgraphs(&run)))
    goto out;
  run.ms_outline = now_ms() - t0;
  LF_LOG_INFO("%zu subgraph(s) outlined (%zu distinct) in %.1f ms", outlined,
              run.num_subs, run.ms_outline);

  /* 2. One loop per subgraph: acquire, build, verify (with a GPU here),
   * repair, refine. */
  for (size_t i = 0; i < run.num_subs; ++i)
    run.subs[i].flops = group_flops(&run, run.subs[i].name);
  probe_gpu(&run);
  if ((st = acquire_stage(&run)))
    goto out;

  /* 3. Decide: swap, keep, or defer. */
  if ((st = verify_stage(&run)))
    goto out;

  run.ms_total = now_ms() - t0;
  if (o->remarks)
    emit_remarks(&run);
  print_summary(&run);
  if (o->report[0]) {
    if ((st = write_report(&run)))
      goto out;
    LF_LOG_INFO("report written to %s", o->report);
  }

out:
  run_free(&run);
  return st;
}

const lf_pass_def_t lf_llm_fuse_pass = {
    .argument = "llm-fuse",
    .name = "LLMFusePass",
    .description = "Fuse tensor subgraphs into LLM-written GPU kernels, "
                   "verified on the GPU before they are swapped in",
    .op_name = "builtin.module",
    .options = fuse_options,
    .num_options = sizeof(fuse_options) / sizeof(fuse_options[0]),
    .options_size = sizeof(lf_fuse_options_t),
    .pre_pipeline = fuse_pre_pipeline,
    .run = run_llm_fuse,
};
