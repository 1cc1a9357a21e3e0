/* reference.h - the reference lowering of an outlined subgraph.
 *
 * The reference is what the subgraph becomes without llm-fuse: the upstream
 * default GPU path (one-shot bufferization with results as out-params,
 * linalg to parallel loops, tiling, mapping to blocks and threads, kernel
 * outlining). It is the verifier's ground truth and the fallback when no
 * candidate is verified, so its launch ABI is the candidates': the
 * subgraph's inputs then its results, as buffers.
 *
 * The upstream path may make several kernels and temporaries, so the
 * reference is a plan: temporaries to allocate, then steps (launches and
 * copies) in order, each launch naming one single-kernel gpu.module and its
 * arguments (an input, an output, a temporary, or a constant scalar).
 */
#ifndef LF_PASSES_REFERENCE_H
#define LF_PASSES_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The upstream pipeline, applied to a module holding the subgraph as a
/// public function. Tile sizes: rows one per block, 256 elements of the
/// innermost tiled dimension per block of threads. In two halves, which
/// llm-fuse-compile (tools/llm-fuse-compile/aot.c) also runs, with a rewrite
/// of its own between them:
///
/// LF_REFERENCE_BUFFERIZE: one-shot bufferization of the whole module,
/// results as out-params (the candidates' buffer ABI).
#define LF_REFERENCE_BUFFERIZE                                                 \
  "one-shot-bufferize{bufferize-function-boundaries=1 "                        \
  "function-boundary-type-conversion=identity-layout-map},"                    \
  "buffer-results-to-out-params{hoist-static-allocs=1 "                        \
  "modify-public-functions=1},canonicalize"
/// LF_REFERENCE_GPU_MAPPING: bufferized linalg to parallel loops, tiled and
/// mapped to blocks and threads, outlined into gpu.modules. math.fpowi is
/// expanded first (a constant exponent into multiplications, another into
/// math.powf): lowered as it is, an i64 exponent reaches libdevice's
/// __nv_powif(float, int) as a 64-bit argument, and on an H100 x^3 came out
/// as x^0 = 1 (the importer MiniGPT's GELU, bench/NOTES.md).
#define LF_REFERENCE_GPU_MAPPING                                               \
  "math-expand-ops{ops=fpowi},"                                                \
  "func.func(convert-linalg-to-parallel-loops,"                                \
  "scf-parallel-loop-tiling{parallel-loop-tile-sizes=1,256 "                   \
  "no-min-max-bounds=1},gpu-map-parallel-loops),"                              \
  "convert-parallel-loops-to-gpu,gpu-kernel-outlining,canonicalize,cse"
#define LF_REFERENCE_PIPELINE                                                  \
  "builtin.module(" LF_REFERENCE_BUFFERIZE "," LF_REFERENCE_GPU_MAPPING ")"
/// LF_REFERENCE_GPU_MAPPING_VIEWS: the same, with the views folded into the
/// loops' loads and stores (fold-memref-alias-ops) before the mapping. Used
/// only when LF_REFERENCE_PIPELINE leaves a memref.subview on the host (an
/// importer's extract_slice of a fused QKV tensor: a strided view the plan
/// cannot pass to a kernel), so every other plan stays as it was.
#define LF_REFERENCE_GPU_MAPPING_VIEWS                                         \
  "math-expand-ops{ops=fpowi},"                                                \
  "func.func(convert-linalg-to-parallel-loops,fold-memref-alias-ops,"          \
  "scf-parallel-loop-tiling{parallel-loop-tile-sizes=1,256 "                   \
  "no-min-max-bounds=1},gpu-map-parallel-loops),"                              \
  "convert-parallel-loops-to-gpu,gpu-kernel-outlining,canonicalize,cse"
#define LF_REFERENCE_PIPELINE_VIEWS                                            \
  "builtin.module(" LF_REFERENCE_BUFFERIZE "," LF_REFERENCE_GPU_MAPPING_VIEWS  \
  ")"

typedef enum lf_ref_arg_kind_e {
  LF_REF_ARG_INPUT,  ///< index: which subgraph input
  LF_REF_ARG_OUTPUT, ///< index: which subgraph result
  LF_REF_ARG_TEMP,   ///< index: which temporary
  LF_REF_ARG_INT,    ///< a constant integer or index (value in `i`)
  LF_REF_ARG_FLOAT,  ///< a constant f64, f32, f16 or bf16 (value in `f`;
                     ///< `type` says which; other float types are refused)
} lf_ref_arg_kind_t;

typedef struct lf_ref_arg_s {
  lf_ref_arg_kind_t kind;
  size_t index;
  int64_t i;
  double f;
  char *type; ///< the kernel argument's MLIR type (owned)
} lf_ref_arg_t;

typedef struct lf_ref_step_s {
  bool is_copy;
  /* launch */
  size_t kernel; ///< index into the plan's kernels
  uint32_t grid[3], block[3];
  lf_ref_arg_t *args;
  size_t num_args;
  /* copy: whole buffers, args[0] the source, args[1] the target */
} lf_ref_step_t;

typedef struct lf_ref_kernel_s {
  char *name;   ///< the kernel's name (k0, k1, ...)
  char *module; ///< its gpu.module as MLIR text, known sizes set
} lf_ref_kernel_t;

typedef struct lf_ref_temp_s {
  char *type; ///< memref type
  /// Its size as the kernels store it: LLVM's allocation size per element
  /// (an i1 is a byte; an iN takes the next power-of-two number of bytes).
  size_t bytes;
  /// A constant buffer (a memref.global the upstream path made of a dense
  /// constant): its contents, `init_size` bytes repeated to fill `bytes`
  /// (one element for a splat, the whole buffer otherwise). NULL: none.
  uint8_t *init;
  size_t init_size;
} lf_ref_temp_t;

/// The opmath truth reference (docs/verification.md, "16-bit accumulation:
/// the opmath reference"): a subgraph that accumulates in bf16 or f16 is
/// lowered a second time with its body computed in f32 (16-bit arguments
/// widened at entry, results rounded at the end, same signature). The
/// worker judges values against it and still times the upstream plan.
#define LF_REFERENCE_OPMATH_KIND "opmath-f32"
/// Where lf_reference_stage puts the truth plan, relative to the folder.
#define LF_REFERENCE_TRUTH_DIR "truth"
/// The promoted function's pipeline: elementwise arith on tensors (the
/// widening at entry, the rounding at the end) to linalg, then the
/// upstream path.
#define LF_REFERENCE_OPMATH_PIPELINE                                           \
  "builtin.module(func.func(convert-elementwise-to-linalg)"                    \
  "," LF_REFERENCE_BUFFERIZE "," LF_REFERENCE_GPU_MAPPING ")"
#define LF_REFERENCE_OPMATH_PIPELINE_VIEWS                                     \
  "builtin.module(func.func(convert-elementwise-to-linalg)"                    \
  "," LF_REFERENCE_BUFFERIZE "," LF_REFERENCE_GPU_MAPPING_VIEWS ")"

/// The wide reference (docs/verification.md, "The f16 overflow boundary"):
/// a subgraph with an f16 result is also lowered as its opmath promotion
/// whose 16-bit float results are NOT rounded at the end (f32 results, the
/// inputs unchanged). The worker reads it only for elements where exactly
/// one of reference and candidate is an infinity, to tell a rounding at the
/// overflow threshold from a wrong value.
#define LF_REFERENCE_WIDE_KIND "f32-results"
/// Where lf_reference_stage puts the wide plan, relative to the folder.
#define LF_REFERENCE_WIDE_DIR "wide"

typedef struct lf_reference_s {
  char *subgraph;  ///< the outlined function's name
  char *signature; ///< its function type over tensors
  lf_ref_temp_t *temps;
  size_t num_temps;
  lf_ref_kernel_t *kernels;
  size_t num_kernels;
  lf_ref_step_t *steps;
  size_t num_steps;
  /// The opmath truth of a subgraph that accumulates in 16 bits (its
  /// own `truth` is NULL), or NULL. Owned.
  struct lf_reference_s *truth;
  /// Why a truth was wanted ("accumulates in bf16 (linalg.reduce)"), NULL
  /// when the subgraph accumulates in 32 bits or more. Owned.
  char *truth_reason;
  /// Why no truth was made although one was wanted (the promotion or its
  /// lowering failed: the upstream plan then judges, as before). Owned.
  char *truth_note;
  /// Set on a truth plan: it is the promoted function's lowering.
  bool is_truth;
  /// The wide plan of a subgraph with an f16 result (its own `wide` is
  /// NULL), or NULL. Owned.
  struct lf_reference_s *wide;
  /// Why no wide plan was made although the subgraph has an f16 result (the
  /// comparison then stays as it was). Owned.
  char *wide_note;
  /// Set on a wide plan: the unrounded promotion's lowering.
  bool is_wide;
  /// On a wide plan: which results it widened (bit k: result k).
  uint64_t wide_outputs;
  /// A contraction-class subgraph whose contractions multiply bf16/f16
  /// operands and sum in f32 (lf_reference_acc32_k): the longest such
  /// reduction, which the plan records ("acc32": {"k": K, "operands":
  /// "f16"}) for the verifier's componentwise bound (docs/verification.md,
  /// "16-bit contractions accumulated in f32"); 0: none (no key).
  int64_t acc32_k;
  /// The operands' type of those contractions: "f16", "bf16" or "mixed".
  const char *acc32_operands;
  /// Lowered by the *_VIEWS pipeline (views folded into the loops).
  bool folded_views;
  /// Lowered with the iteration space of its linalg.generic ops permuted,
  /// reduction loops innermost (a reduction over a leading dimension left
  /// an scf.for on the host otherwise; reference.c reductions_innermost_cb).
  bool reductions_innermost;
} lf_reference_t;

/// Lowers outlined function `func` (a func.func over static tensors) by the
/// upstream path into `*out`. The passes of LF_REFERENCE_PIPELINE must be
/// registered. `func` is not modified. On failure *out is empty and the
/// status says which op or step could not be lowered.
///
/// When the subgraph accumulates in 16 bits (lf_reference_accum16), also
/// lowers its opmath promotion (LF_REFERENCE_OPMATH_PIPELINE) into
/// `out->truth`. A promotion that fails is not an error: `out->truth` stays
/// NULL and `out->truth_note` says why (its diagnostics are captured, not
/// emitted).
lf_status_t lf_reference_lower(MlirOperation func, lf_reference_t *out);

/// The longest reduction of the contractions of `func` that multiply two
/// bf16/f16 operands and sum in f32 (a named linalg.*matmul* / *matvec /
/// *vecmat / dot with 16-bit float inputs and an f32 result; a
/// linalg.generic with an f32 result in which two 16-bit float inputs vary
/// along a reduction loop: the product of its reduction bounds), when
/// `func` is a contraction-class subgraph (llm_fuse.class = "contraction");
/// 0 otherwise or when a size is not static. `*out_operands` (may be NULL):
/// "f16", "bf16" or "mixed".
int64_t lf_reference_acc32_k(MlirOperation func, const char **out_operands);

/// Whether `func` accumulates in 16 bits: a reduction (linalg.generic with
/// a "reduction" iterator, linalg.reduce) whose result element type is bf16
/// or f16 and whose body adds or multiplies in that type, or a named
/// contraction (linalg.matmul, batch_matmul, matvec, dot, conv, pooling
/// sum, ...; tosa.matmul, reduce_sum, ...) with a bf16/f16 result. Writes
/// a reason ("accumulates in bf16 (linalg.reduce)") to `why` and returns
/// true; false (and `why` empty) otherwise.
bool lf_reference_accum16(MlirOperation func, char *why, size_t why_size);

/// The opmath promotion of `func`, a new func.func (owned by the caller,
/// mlirOperationDestroy) with the same name and signature: each bf16/f16
/// argument widened to f32 at entry (arith.extf), every bf16/f16 type,
/// constant and attribute of the body made f32 (extf/truncf and tosa.cast
/// that become f32 to f32 removed), each 16-bit result rounded at the end
/// (arith.truncf). Tensor-level extf/truncf need
/// convert-elementwise-to-linalg before bufferization. UNIMPLEMENTED (and
/// a null op) for what it cannot promote: several blocks, types that hold
/// a 16-bit float other than scalars, tensors, memrefs and vectors,
/// attributes it does not know that mention one, or a result that does
/// not verify (the diagnostics go to the context's handlers).
lf_status_t lf_reference_promote(MlirOperation func, MlirOperation *out);

/// lf_reference_promote, or with `round_results` false its wide form: the
/// 16-bit float results are returned in f32, not rounded (the function's
/// type says so; its inputs are unchanged).
lf_status_t lf_reference_promote_ex(MlirOperation func, bool round_results,
                                    MlirOperation *out);

/// Whether `func` has a result whose element type is f16 (a wide plan is
/// made for it: bf16 has f32's exponent range, so no f32 value rounds to a
/// bf16 infinity that is not nearly an f32 one).
bool lf_reference_wants_wide(MlirOperation func);

/// The plan as JSON (schema "llm-fuse-reference/0"), kernels by name only.
/// A float argument carries its exact bits in its own width ("bits": 16
/// hex digits for f64, 8 for f32, 4 for f16 and bf16, which a 2-byte
/// kernel parameter reads from the low bytes) and "value" for people.
/// A plan with a truth names it ("truth": {"plan": "truth/plan.json",
/// "kind", "reason"}), one whose truth failed says why ("truth_note"); a
/// truth plan says what it is ("opmath": {"kind", "reason"}). Plans of
/// subgraphs that accumulate in 32 bits have none of these keys. Likewise
/// a plan with a wide plan names it ("wide": {"plan": "wide/plan.json",
/// "kind": "f32-results"}) or says why it has none ("wide_note"), and a
/// wide plan says what it is ("wide_results": {"kind", "outputs": [k..]});
/// subgraphs without an f16 result have none of these.
/// Returns a malloc'ed string or NULL when out of memory.
char *lf_reference_plan_json(const lf_reference_t *ref);

/// Frees what `ref` owns. Accepts NULL.
void lf_reference_free(lf_reference_t *ref);

/// Writes `ref` into folder `dir` (created if missing) as the verification
/// worker reads it: plan.json and each kernel's <name>.mlir; with `build`,
/// also <name>.ptx and <name>.cubin (when ptxas exists) built for `chip`.
/// A truth plan goes the same way into `dir`/truth (a stale truth folder
/// is removed when `ref` has none), a wide plan into `dir`/wide.
/// `*out_build_ms` (may be NULL) receives the build time of both.
lf_status_t lf_reference_stage(const lf_reference_t *ref, const char *chip,
                               const char *dir, bool build,
                               double *out_build_ms);

#ifdef __cplusplus
}
#endif

#endif /* LF_PASSES_REFERENCE_H */
