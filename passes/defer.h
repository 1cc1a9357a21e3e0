/* defer.h - deferred verification (verify=defer): a candidate kernel and
 * the original ops behind a runtime guard that verifies the candidate on
 * the first call on the real GPU.
 *
 * Outlined function @F becomes
 *
 *   func.func private @F(%a0: tensor<...>, ...) -> tensor<...> {
 *     %blob = llvm.mlir.addressof @F_guard_blob : !llvm.ptr
 *     %size = arith.constant N : i64
 *     %s = func.call @lf_rt_guard_decide(%blob, %size)
 *         : (!llvm.ptr, i64) -> i32
 *     %promoted = arith.cmpi eq, %s, %c1_i32 : i32
 *     %r = scf.if %promoted -> (tensor<...>) {
 *       %c = func.call @F_candidate(%a0, ...)   // the launch (swap.h)
 *       scf.yield %c
 *     } else {
 *       %f = func.call @F_fallback(%a0, ...)    // the original ops
 *       scf.yield %f
 *     }
 *     return %r
 *   }
 *   llvm.mlir.global private constant @F_guard_blob("LFGUARD1...")
 *   func.func private @lf_rt_guard_decide(!llvm.ptr, i64) -> i32
 *
 * @F_fallback is a copy of @F's body, @F_candidate its swap (lf_swap_in),
 * with its gpu.binary @F_candidate_kernel. The blob (layout in
 * runtime/mgpu/llm_fuse_guard.h) holds the reference plan and its kernels,
 * the candidate's build result and binary, the record key
 * "<F>:<16 hex digits of a hash of the rest>" and the worker's arguments;
 * lf_rt_guard_decide (libllm_fuse_rt) runs the worker on it once per
 * process, or reads the decision recorded for the key.
 */
#ifndef LF_PASSES_DEFER_H
#define LF_PASSES_DEFER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "builder/builder.h"
#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Attribute on @F_fallback and @F_candidate: "fallback" or "candidate".
#define LF_ATTR_GUARD_ROLE "llm_fuse.guard_role"
/// Attribute on the guarded @F: the record key.
#define LF_ATTR_GUARD_KEY "llm_fuse.guard_key"

/// What the guard is built with. Zero-initialize, then set what you need.
typedef struct lf_defer_options_s {
  /// The GPU the reference kernels are built for ("sm_90" when NULL).
  const char *chip;
  /// The record file's compile-time default (pass option guard-record);
  /// NULL or "": the runtime's default. LLM_FUSE_GUARD_RECORD overrides it.
  const char *record_path;
  /// Passed to the worker: --min-speedup (when > 0), --flops (when > 0),
  /// --lenient-nonfinite (attention-like subgraphs).
  double min_speedup;
  double flops;
  bool lenient_nonfinite;
  /// TF32 mode (pass option tf32=1): --tf32-k (when > 0), the longest
  /// reduction of the subgraph's f32 contractions; it is in the hashed
  /// arguments, so the record key of a TF32 guard differs from an exact
  /// one's, and nothing changes without it.
  int64_t tf32_k;
  /// lf_defer_stage_and_guard: keep the staging folder (and say where).
  bool keep_temps;
} lf_defer_options_t;

/// Puts outlined function `func` of `module` behind the guard (file
/// comment), with `build` (a successful build) as the candidate and the
/// verification inputs read from `staged_dir`: reference/ as
/// lf_reference_stage writes it (plan.json, <kernel>.cubin or .ptx) and
/// candidate/ as lf_build_result_write_dir writes it. On failure the
/// module is as it was and the status says why. Output is deterministic:
/// the same inputs give the same IR.
lf_status_t lf_defer_in(MlirOperation module, MlirOperation func,
                        const lf_build_result_t *build, const char *staged_dir,
                        const lf_defer_options_t *opts);

/// The pass's entry point: lowers `func` to its reference
/// (lf_reference_lower; the reference pipeline's passes must be
/// registered), stages it with its kernels built for opts->chip (ptxas
/// when present, else PTX) and the candidate in a temporary folder, calls
/// lf_defer_in, and removes the folder. Needs no GPU. `opts` may be NULL
/// (defaults).
lf_status_t lf_defer_stage_and_guard(MlirOperation module, MlirOperation func,
                                     const lf_build_result_t *build,
                                     const lf_defer_options_t *opts);

#ifdef __cplusplus
}
#endif

#endif /* LF_PASSES_DEFER_H */
