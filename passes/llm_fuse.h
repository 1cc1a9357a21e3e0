/* llm_fuse.h - the `llm-fuse` driver pass and its options.
 *
 * The pass is the whole pipeline of llm-fuse on one module: partition,
 * outline, acquire a kernel per subgraph, build, verify, swap. The options
 * below are its user interface; their table (and descriptions, which
 * `llm-fuse-opt --help` prints) lives in llm_fuse.c.
 */
#ifndef LF_PASSES_LLM_FUSE_H
#define LF_PASSES_LLM_FUSE_H

#include <stdbool.h>
#include <stdint.h>

#include "passes/pass_def.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lf_fuse_options_s {
  char *provider;    /* openai | replay | none */
  char *endpoint;    /* base URL of an OpenAI-compatible API */
  char *model;       /* model name sent to the endpoint */
  char *api_key_env; /* name of the environment variable holding the key */
  char *replay_dir;  /* recorded exchanges for the replay provider */
  char *cache_dir;   /* the kernel cache */
  bool offline;      /* never touch the network */
  char *arch;        /* sm_80 | sm_90 | sm_90a */
  char *verify;      /* auto | defer | none */
  double min_speedup;
  int64_t max_attempts;
  int64_t max_concurrency;
  bool build_ahead;  /* build variant v + 1 while v is verified */
  int64_t max_requests; /* budgets per module; 0: no limit */
  int64_t max_tokens;
  double max_seconds;
  char *record_dir;        /* openai: record exchanges here */
  bool keep_temps;         /* keep the verification staging folders */
  char *report;            /* JSON report path; "" for none */
  bool remarks;            /* a remark on the IR per function/subgraph */
  char *guard_record;      /* verify=defer: default record file; "" runtime's */
  int64_t max_refinements; /* speed rounds after a verified kernel; 0 off */
  double min_roofline;     /* swap only at or above this roofline fraction */
  double http_timeout;     /* seconds per HTTP attempt (openai) */
  bool stream;             /* ask for streamed replies (openai) */
  char *remote_cache;      /* HTTP store URL; "": $LLM_FUSE_REMOTE_CACHE */
  double remote_timeout;   /* seconds per request to the store */
  bool remote_push;        /* push what this build stores */
  char *signing_key;       /* private key file; "": $LLM_FUSE_SIGNING_KEY */
  char *trusted_keys;      /* keyring file; "": $LLM_FUSE_TRUSTED_KEYS */
  bool require_signed;     /* local verdicts need a trusted signature too */
  char *pattern_table;     /* table folder; "": shipped; "none": off */
  bool tf32; /* TF32 tensor cores allowed for f32 contractions (opt-in) */
  bool synth; /* elementwise subgraphs get the compiler's own kernel */
} lf_fuse_options_t;

/// The `llm-fuse` pass.
extern const lf_pass_def_t lf_llm_fuse_pass;

#ifdef __cplusplus
}
#endif

#endif /* LF_PASSES_LLM_FUSE_H */
