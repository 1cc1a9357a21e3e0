/* synth_ew.h - the elementwise kernel synthesizer: the compiler writes the
 * kernel itself for an outlined subgraph made only of elementwise work
 * (docs/pattern-table.md, "Synthesized elementwise kernels").
 *
 * A per-math template cannot cover "any chain of elementwise ops"; this does
 * what IREE's and Inductor's pointwise fusion do: one fused kernel, a flat
 * grid-stride loop over the output's elements, each input read through its
 * own indexing map, the scalar body of every linalg.generic cloned in
 * dependence order (the MLIR C API, with a value map; no text surgery), wide
 * loads and stores where the innermost dimension allows. It lives in passes/
 * because it needs the subgraph's IR, which only the pass holds (the acquire
 * loop in llm_client/ sees text and links no MLIR): the pass synthesizes
 * before acquisition and hands the text to the loop as the task's
 * `synth_kernel`.
 *
 * What it takes: a func.func over static tensors (rank 0 to 6) and scalars
 * whose body holds only all-parallel linalg.generic ops with projected-
 * permutation maps (constant-0 results allowed for size-1 dimensions),
 * elementwise named ops, linalg.map/fill/broadcast/transpose (generalized
 * first), arith/math ops on tensors (converted to generics first),
 * tensor.empty, scalar or splat constants and unit reshapes
 * (tensor.expand_shape/collapse_shape that only add or drop size-1
 * dimensions); results all of one shape. Element types: f16, bf16, f32,
 * f64 and integers. Anything else is refused with the op and the reason,
 * and the subgraph keeps what it had.
 *
 * Deterministic: the same function gives the same text, byte for byte.
 */
#ifndef LF_PASSES_SYNTH_EW_H
#define LF_PASSES_SYNTH_EW_H

#include <stddef.h>

#include "base/status.h"
#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The synthesizer's version, recorded as the model of its kernels
/// ("synth-ew/1"): change it when the kernels it writes change.
#define LF_SYNTH_EW_VERSION "synth-ew/1"

/// Threads per block of a synthesized kernel.
#define LF_SYNTH_EW_BLOCK 256
/// The most blocks it launches; beyond, each thread loops (grid stride).
#define LF_SYNTH_EW_MAX_GRID 16384

/// A synthesized kernel.
typedef struct lf_synth_ew_s {
  char *text;         /* the gpu.module text (malloc'ed) */
  int vector_width;   /* elements per thread per step: 1 (scalar), 2, 4, 8 */
  size_t generics;    /* linalg.generic bodies cloned (after generalization) */
  size_t inputs;      /* kernel arguments read */
  long long grid;     /* blocks launched */
  long long elements; /* output elements (per result) */
} lf_synth_ew_t;

/// Synthesizes a kernel for `func` (an outlined subgraph, borrowed; it is
/// not changed: the work happens on a copy). The kernel is named
/// `kernel_name` (an identifier; NULL: the function's name) and follows
/// docs/kernel-contract.md (signature: the function's inputs then results
/// as identity-layout memrefs; block LF_SYNTH_EW_BLOCK; static grid).
/// Returns OK with `*out` filled (free with lf_synth_ew_clear), or
/// UNIMPLEMENTED when the subgraph is refused: the message names the op
/// (and its location) and why, e.g. "linalg.generic at f.mlir:12:8: a
/// reduction iterator: not elementwise". INTERNAL for a bug (a kernel that
/// does not verify).
lf_status_t lf_synth_ew(MlirOperation func, const char *kernel_name,
                        lf_synth_ew_t *out);

/// Frees what `s` holds and zeroes it. Accepts NULL.
void lf_synth_ew_clear(lf_synth_ew_t *s);

#ifdef __cplusplus
}
#endif

#endif /* LF_PASSES_SYNTH_EW_H */
