/* verify_client.h - how the compiler asks for a candidate to be verified.
 *
 * Candidates never run in the compiler's process. lf_verify_candidate()
 * starts `llm-fuse-verify` as a child in its own process group, watches it,
 * kills the whole group when it runs past its time limit, and reads the
 * JSON verdict it prints. The limit is derived from the reference's time:
 * the worker reports "reference-ms X" on a progress pipe as soon as it has
 * run the reference once, and the limit becomes
 *   floor_ms + reference_factor * X
 * (only floor_ms before that). Anything but a well-formed verdict (a crash,
 * a timeout, a worker that exits without one, malformed JSON, a verdict
 * that contradicts the exit status) is a rejection with a reason word and
 * a sentence, never an error of the compiler.
 */
#ifndef LF_RUNTIME_VERIFY_CLIENT_H
#define LF_RUNTIME_VERIFY_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "runtime/verify_protocol.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lf_verify_request_s {
  /// The worker executable. NULL: $LLM_FUSE_VERIFY, else `llm-fuse-verify`
  /// beside the running executable, else in ../bin from it.
  const char *worker;
  const char *plan_path;      ///< reference plan.json (borrowed)
  const char *candidate_path; ///< candidate result.json (borrowed)
  uint64_t seed;
  int trials;
  bool atomics;           ///< --atomics: no bitwise repeat check
  bool lenient_nonfinite; ///< --lenient-nonfinite (attention-like classes)
  bool timing;
  double flops;
  double min_speedup;
  double floor_ms;         ///< the watchdog's floor
  double reference_factor; ///< ... plus this many reference times
  /// Extra arguments for the worker, NULL-terminated (may be NULL).
  const char *const *extra_args;
} lf_verify_request_t;

/// Defaults: seed 1, 5 trials, timing on, floor 60 s, factor 400.
void lf_verify_request_init(lf_verify_request_t *request);

/// Runs the worker on one candidate and fills `*out` (owned by the caller,
/// lf_verdict_free). Returns a non-OK status only for a malformed request
/// (missing paths) or when the child cannot be started at all for lack of
/// resources; every failure of the worker or the candidate is a verdict
/// with accepted false. Client-made reasons: "no-worker", "crash",
/// "watchdog-timeout", "no-verdict", "malformed-verdict".
lf_status_t lf_verify_candidate(const lf_verify_request_t *request,
                                lf_verdict_t *out);

#ifdef __cplusplus
}
#endif

#endif /* LF_RUNTIME_VERIFY_CLIENT_H */
