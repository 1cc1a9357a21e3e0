/* verify_worker.h - the verification protocol on the GPU.
 *
 * What `llm-fuse-verify` runs, in its own process (never in the
 * compiler's: a bad kernel can hang, crash or leave the CUDA context
 * unusable). It loads a subgraph's reference plan (llm-fuse-reference) and
 * a candidate (llm-fuse-build-kernel's result.json and cubin/PTX), runs the
 * trials of docs/verification.md, times both, and returns a verdict in the
 * schema LF_VERDICT_SCHEMA.
 */
#ifndef LF_RUNTIME_VERIFY_WORKER_H
#define LF_RUNTIME_VERIFY_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cJSON;

typedef struct lf_verify_worker_options_s {
  /// DIR/plan.json; kernels DIR/<k>.cubin|.ptx; the truth it may name in
  /// DIR/truth/
  const char *plan_path;
  const char *candidate_path; ///< DIR/result.json; DIR/kernel.cubin|.ptx
  uint64_t seed;              ///< base seed of the trial schedule
  int trials;                 ///< random trials (at least 5 are run)
  bool atomics; ///< the candidate declares atomics: no bitwise repeat
  /// In the NaN/Inf trial, let a finite candidate value pass where the
  /// reference is NaN/Inf (masked subgraphs such as causal attention, whose
  /// reference computes the masked-out products and so propagates NaN
  /// from inputs the math never uses).
  bool lenient_nonfinite;
  /// Judge values by the upstream plan even when it names an opmath truth
  /// (docs/verification.md, "16-bit accumulation: the opmath reference").
  bool upstream_reference;
  /// Ignore the plan's wide reference (docs/verification.md, "The f16
  /// overflow boundary"): an infinity then matches only itself, as before
  /// it existed. For comparisons.
  bool no_wide_reference;
  /// TF32 mode (pass option tf32=1): the subgraph's f32 contractions reduce
  /// over at most this many terms, and its f32 outputs are judged with
  /// lf_vtolerance_tf32(tf32_k) (docs/verification.md, "TF32 mode"); 0: off.
  int64_t tf32_k;
  bool timing;             ///< time candidate and reference after the trials
  double flops;            ///< the subgraph's FLOPs for the roofline (0: none)
  double min_speedup;      ///< reject below this speed-up (0: no check)
  double launch_floor_ms;  ///< a launch may take at least this long
  double launch_factor;    ///< ... or this many times the reference's time
  double timing_budget_ms; ///< device time spent on timed runs, about
  int progress_fd;         ///< -1, or where "reference-ms X\n" is written
  int device;              ///< CUDA device ordinal
} lf_verify_worker_options_t;

/// Defaults: seed 1, 5 trials, timing on, floor 2000 ms, factor 50,
/// budget 300 ms, no progress fd, device 0, the truth judges when the plan
/// names one.
void lf_verify_worker_options_init(lf_verify_worker_options_t *options);

/// Runs the protocol. A candidate's failure (it does not load, crashes,
/// hangs, computes wrong values, ...) is a verdict with accepted false, not
/// a status. A status (and no verdict) means the request could not be
/// served: no driver or GPU (UNAVAILABLE), unreadable or malformed plan or
/// result (INVALID_ARGUMENT), out of device memory. `*out_verdict` is owned
/// by the caller (cJSON_Delete). `*out_sticky` is set when the CUDA context
/// is no longer usable: the caller should exit without touching CUDA.
lf_status_t lf_verify_worker_run(const lf_verify_worker_options_t *options,
                                 struct cJSON **out_verdict, bool *out_sticky);

#ifdef __cplusplus
}
#endif

#endif /* LF_RUNTIME_VERIFY_WORKER_H */
