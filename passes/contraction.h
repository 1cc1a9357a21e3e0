/* contraction.h - the reduction length K of linalg contractions, for the
 * verifier's error scales: TF32 mode's f32 contractions (llm_fuse.c) and
 * the 16-bit contractions summed in f32 (reference.c, "acc32";
 * docs/verification.md). */
#ifndef LF_PASSES_CONTRACTION_H
#define LF_PASSES_CONTRACTION_H

#include <stdbool.h>
#include <stdint.h>

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Which tensors count: `input` for each multiplied input, `result` (NULL:
/// any) for the op's first result; `seen` (may be NULL) is told the type of
/// every multiplied input of an op that counts.
typedef struct lf_contraction_filter_s {
  bool (*input)(MlirType type);
  bool (*result)(MlirType type);
  void (*seen)(MlirType type, void *user);
  void *user;
} lf_contraction_filter_t;

/// The reduction length of `op` when it is a contraction the filter
/// accepts: a linalg.generic in which at least two accepted inputs vary
/// along a reduction loop (K: the product of its reduction loops' static
/// bounds; partition.c's contraction test), or a named linalg.*matmul*,
/// *matvec, *vecmat or linalg.dot whose two inputs are accepted (K from
/// the element counts: A B / C per batch is K^2, as outline.c's FLOP
/// count). 0 otherwise, or when K is unknown.
int64_t lf_contraction_k(MlirOperation op, const lf_contraction_filter_t *f);

#ifdef __cplusplus
}
#endif

#endif /* LF_PASSES_CONTRACTION_H */
