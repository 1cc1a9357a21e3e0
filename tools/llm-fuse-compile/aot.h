/* aot.h - ahead-of-time compilation of a tensor-level model to a host
 * object file that drives the GPU through the MLIR GPU runtime ABI
 * (libllm_fuse_rt), plus the C header of its entry points.
 *
 * The pipeline, in order:
 *   1. the `llm-fuse` pass, when asked for and registered;
 *   2. TOSA to linalg, when the module holds TOSA;
 *   3. the reference lowering's upstream pipeline (passes/reference.h) in
 *      its two halves: LF_REFERENCE_BUFFERIZE (one-shot bufferization,
 *      results as out-params); then copies between strided views become
 *      linalg.generic copies, so that they become kernels; then
 *      LF_REFERENCE_GPU_MAPPING (linalg to parallel loops, mapping to
 *      blocks and threads, kernel outlining);
 *   4. the host rewrite: every buffer the host code allocates, copies or
 *      reads from a constant global moves to device memory (gpu.alloc,
 *      gpu.memcpy, gpu.dealloc); anything else left on the host is an error
 *      located at the op;
 *   5. gpu-async-region, then gpu-lower-to-nvvm-pipeline (NVVM, the kernels
 *      to PTX/cubin in a gpu.binary, gpu-to-llvm for the host);
 *   6. translation to LLVM IR, -O2, and an x86-64 ELF object (PIC) through
 *      the LLVM C API's TargetMachine.
 *
 * Entry points are the module's public functions. Their tensors are
 * passed as memref descriptors of device memory: inputs first, then one
 * out-parameter per result, which the caller allocates (see the generated
 * header's comment).
 */
#ifndef LF_TOOLS_LLM_FUSE_COMPILE_AOT_H
#define LF_TOOLS_LLM_FUSE_COMPILE_AOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/// How the kernels are embedded in the object.
typedef enum lf_aot_format_e {
  LF_AOT_FORMAT_AUTO,   ///< fatbin when the CUDA toolkit is found, else ptx
  LF_AOT_FORMAT_PTX,    ///< PTX, compiled by the driver at load time
  LF_AOT_FORMAT_CUBIN,  ///< a cubin for the chip (needs ptxas)
  LF_AOT_FORMAT_FATBIN, ///< cubin + PTX (needs ptxas and fatbinary)
} lf_aot_format_t;

/// What the object is: the object file, or one of the intermediate forms.
typedef enum lf_aot_emit_e {
  LF_AOT_EMIT_OBJECT,
  LF_AOT_EMIT_LLVM, ///< LLVM IR text, before -O2
  LF_AOT_EMIT_MLIR, ///< the LLVM dialect module, before translation
} lf_aot_emit_t;

typedef struct lf_aot_options_s {
  const char *chip; ///< sm_80, sm_90 or sm_90a
  lf_aot_format_t format;
  lf_aot_emit_t emit;
  bool run_llm_fuse;            ///< run the llm-fuse pass first
  const char *llm_fuse_options; ///< its options ("provider=none ..."), or NULL
} lf_aot_options_t;

/// One tensor at the boundary.
typedef struct lf_aot_tensor_s {
  char *elem;        ///< MLIR element type ("f32", "bf16", "i32")
  const char *ctype; ///< the C type of one element (static string)
  size_t elem_bytes;
  intptr_t rank;
  int64_t *shape; ///< rank sizes
} lf_aot_tensor_t;

/// One entry point: a public function of the model.
typedef struct lf_aot_entry_s {
  char *name;
  lf_aot_tensor_t *inputs, *outputs;
  size_t num_inputs, num_outputs;
} lf_aot_entry_t;

typedef struct lf_aot_result_s {
  lf_aot_entry_t *entries;
  size_t num_entries;
  const char *format; ///< "ptx", "cubin" or "fatbin" (static string)
  const char *chip;   ///< borrowed from the options
  char *output;       ///< the object (or IR text), malloc'ed
  size_t output_size;
} lf_aot_result_t;

/// Compiles `module` (modified in place) by the pipeline above into `*out`.
/// The context must have every dialect loaded or registered, every MLIR pass
/// and the LLVM IR translations registered. IR problems are emitted as
/// located diagnostics on the context and the status says which step
/// failed. On failure `*out` is empty.
lf_status_t lf_aot_compile(MlirModule module, const lf_aot_options_t *options,
                           lf_aot_result_t *out);

/// The C header declaring the entry points of `result`. `source` names the
/// model in the header's comment; `guard` is the include guard. Returns a
/// malloc'ed string, or NULL when out of memory.
char *lf_aot_header(const lf_aot_result_t *result, const char *source,
                    const char *guard);

/// Frees what `result` owns. Accepts NULL.
void lf_aot_result_free(lf_aot_result_t *result);

#ifdef __cplusplus
}
#endif

#endif /* LF_TOOLS_LLM_FUSE_COMPILE_AOT_H */
