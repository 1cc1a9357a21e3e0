/* builder.h - the kernel builder: untrusted kernel text to PTX/cubin, or a
 * structured, size-capped error that fits a repair prompt.
 *
 * A candidate kernel is MLIR text holding one gpu.module (the LLM's reply,
 * or the part of it extracted by the client). The builder parses and
 * verifies it, checks it against the kernel contract (docs/kernel-contract.md)
 * for the outlined subgraph's signature, lowers it to NVVM and LLVM IR,
 * emits PTX with LLVM's NVPTX back end and, when the CUDA toolkit's ptxas is
 * present, assembles a cubin.
 *
 * Two entry points:
 *  - lf_build_kernel() runs the build in a child process (the tool
 *    llm-fuse-build-kernel) under a wall-clock timeout and resource limits.
 *    The MLIR parser, MLIR passes and the LLVM back end can abort or crash
 *    on hostile input; the caller survives and gets a "crash" or "timeout"
 *    result. This is the one compiler code should use.
 *  - lf_build_kernel_in_process() runs the same stages in the calling
 *    process. It is what the child runs; use it directly only on trusted
 *    text (tests, tools).
 *
 * Both return a non-OK status only when the builder itself could not judge
 * the candidate (bad request, missing tool, out of memory, I/O errors). A
 * candidate that fails to build is an OK status with a result whose kind
 * says why.
 */
#ifndef LF_BUILDER_BUILDER_H
#define LF_BUILDER_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "base/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Caps on the text a result carries, so that a repair prompt stays small.
#define LF_BUILD_MESSAGE_CAP 320
#define LF_BUILD_DIAGNOSTICS_CAP 1400
#define LF_BUILD_HINT_CAP 700
/// The most lf_build_result_repair_text() writes, in bytes.
#define LF_BUILD_REPAIR_CAP 2048
/// The largest kernel text accepted (bytes); larger is a "parse" failure.
#define LF_BUILD_MAX_KERNEL_SIZE (1u << 20)

/// What happened to a candidate. OK is zero.
typedef enum lf_build_kind_e {
  LF_BUILD_OK = 0,
  LF_BUILD_PARSE,      ///< not valid MLIR text
  LF_BUILD_VERIFY,     ///< parsed, but an op's verifier rejected it
  LF_BUILD_CONTRACT,   ///< valid IR that breaks the kernel contract
  LF_BUILD_LOWERING,   ///< MLIR lowering, LLVM IR translation or NVPTX failed
  LF_BUILD_PTXAS,      ///< ptxas rejected the PTX
  LF_BUILD_CRASH,      ///< the builder process died (signal, abort, OOM)
  LF_BUILD_TIMEOUT,    ///< the builder process ran past its time limit
  LF_BUILD_KIND_COUNT_ /* not a kind */
} lf_build_kind_t;

/// Lower-case name of a kind ("ok", "parse", ..., "timeout"); "unknown" for
/// values out of range.
const char *lf_build_kind_name(lf_build_kind_t kind);

/// Parses a kind name; false when `name` is not one.
bool lf_build_kind_parse(const char *name, lf_build_kind_t *out_kind);

/// What to build. Zero-initialize, then set what you need; borrowed
/// pointers must outlive the call.
typedef struct lf_build_request_s {
  /// The candidate's MLIR text (borrowed; need not be NUL-terminated).
  const char *kernel_text;
  size_t kernel_size;
  /// The outlined subgraph's function type as MLIR text, e.g.
  /// "(tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32>". Required.
  const char *signature;
  /// Lines of the reply before the kernel text; added to every line number
  /// in diagnostics so that they point into the reply.
  int line_offset;
  /// "sm_90" (default when NULL), "sm_90a" or "sm_80". A kernel that uses
  /// sm_90a-only ops (wgmma, setmaxnreg) requested for sm_90 is built for
  /// sm_90a; the result's chip says which.
  const char *chip;
  /// Accept llvm.inline_asm and nvvm.inline_ptx (off: a contract violation).
  bool allow_inline_asm;
  /// Trusted text made by llm-fuse itself (the reference lowering): no
  /// contract check and no signature (may be NULL). The module must still
  /// hold one gpu.module with one kernel carrying known_block_size and
  /// known_grid_size. Never set for text from a provider.
  bool trusted;
  /// Do not run ptxas even when it is found (PTX only).
  bool skip_cubin;
  /// ptxas to use; NULL: $LLM_FUSE_PTXAS, else a search of
  /// $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin and PATH. None
  /// found by the search: PTX only. A named one (here or in the
  /// environment) that does not exist: NOT_FOUND.
  const char *ptxas_path;
  /// CUDA libdevice bitcode, linked when math ops lower to __nv_* calls;
  /// NULL: $LLM_FUSE_LIBDEVICE, else nvvm/libdevice/libdevice.10.bc under
  /// the same roots. None found: kernels with math functions fail
  /// (lowering); a named one that does not exist: NOT_FOUND.
  const char *libdevice_path;
  /// Called as each stage starts: "parse", "contract", "lower", "codegen"
  /// (LLVM IR, O3, PTX), "ptxas". Only lf_build_kernel_in_process() calls
  /// it; the child of lf_build_kernel() logs the stages so that a crash can
  /// be put down to one. May be NULL.
  void (*on_stage)(const char *stage, void *user_data);
  void *on_stage_user_data;
} lf_build_request_t;

/// Limits of the child process of lf_build_kernel(). Zero fields take the
/// defaults.
typedef struct lf_build_limits_s {
  int64_t timeout_ms;   ///< wall clock; default 60000
  int64_t memory_bytes; ///< RLIMIT_AS; default 8 GiB
  int64_t cpu_seconds;  ///< RLIMIT_CPU; default timeout + 5 s
  /// The llm-fuse-build-kernel executable; NULL: $LLM_FUSE_BUILD_KERNEL,
  /// else found next to the binary or plugin that holds this library (same
  /// folder, or ../bin).
  const char *tool_path;
} lf_build_limits_t;

/// A tensor map the kernel asks for (docs/kernel-contract.md, "Tensor
/// maps"): the launcher encodes it with cuTensorMapEncodeTiled on the
/// viewed buffer and passes the 128 bytes as a grid-constant parameter.
typedef struct lf_tensor_map_spec_s {
  int param;          ///< index of the viewed ordinary parameter (inputs, then results)
  int rank;           ///< 1..5
  char dtype[8];      ///< "bf16", "f16", "f32", ...
  uint64_t dims[5];   ///< the buffer's dimensions, row-major
  uint32_t box[5];    ///< the box, row-major
  int swizzle_bytes;  ///< 0 (none), 32, 64 or 128
  int l2promo_bytes;  ///< 0 (none), 64, 128 or 256
  bool oob_nan;       ///< out-of-bounds fill: NaN (true) or zero
} lf_tensor_map_spec_t;

/// How the kernel receives one subgraph operand, or one tensor map.
typedef struct lf_kernel_param_s {
  bool is_output;  ///< false: an input (read-only), true: a result
  int operand;     ///< index among the inputs, or among the results
                   ///< (a tensor map: the viewed ordinary parameter)
  char *type;      ///< the kernel argument's MLIR type, e.g. memref<4xf32>
  bool is_pointer; ///< true: one .u64 global pointer; false: a scalar value
  bool is_tensor_map;       ///< a 128-byte grid-constant CUtensorMap
  lf_tensor_map_spec_t map; ///< when is_tensor_map
} lf_kernel_param_t;

/// The outcome of one build. Owned by the caller: lf_build_result_destroy().
typedef struct lf_build_result_s {
  lf_build_kind_t kind;
  /// One line saying what failed ("" on success). At most
  /// LF_BUILD_MESSAGE_CAP bytes.
  char *message;
  /// The first diagnostics, one per line, located as reply:LINE:COL with
  /// lines relative to the reply. At most LF_BUILD_DIAGNOSTICS_CAP bytes.
  char *diagnostics;
  /// A one-paragraph repair hint ("" on success). At most LF_BUILD_HINT_CAP.
  char *hint;

  /* Known once the contract check passed (else NULL / zero). */
  char *kernel_name;
  char *chip; ///< the chip actually built for
  uint32_t block[3];
  uint32_t grid[3];
  uint32_t dynamic_shared_bytes;
  lf_kernel_param_t *params;
  size_t num_params;

  /* Products (on success). */
  char *ptx; ///< NUL-terminated PTX text
  size_t ptx_size;
  uint8_t *cubin; ///< NULL when ptxas was not run
  size_t cubin_size;
  char *ptxas_info; ///< ptxas -v summary (registers, spills, smem) or NULL

  /* Timings in milliseconds (0 for stages not reached). ms_total is the
   * whole call; for lf_build_kernel() it includes starting the child. */
  double ms_parse, ms_contract, ms_lower, ms_llvm, ms_ptxas, ms_total;
  /* lf_build_kernel(): user + system time of the child and its ptxas (not
   * written to JSON; 0 in process). */
  double ms_cpu;
} lf_build_result_t;

/// Frees a result and everything it owns. Accepts NULL.
void lf_build_result_destroy(lf_build_result_t *result);

/// Builds in a child process (see the file comment). `limits` may be NULL.
/// On OK, *out_result is a new result (any kind); on error it is NULL.
/// Thread-safe; uses a private temporary folder, and a fork of the build
/// server (builder/server.c; started on first use as `TOOL --serve 3`, off
/// with LLM_FUSE_BUILD_SERVER=0) or else fork+exec of the tool, waiting on
/// its own child only.
lf_status_t lf_build_kernel(const lf_build_request_t *request,
                            const lf_build_limits_t *limits,
                            lf_build_result_t **out_result);

/// Builds in this process. Same contract as lf_build_kernel() except that a
/// crash of MLIR or LLVM takes the caller down; never use it on untrusted
/// text outside a child process.
lf_status_t lf_build_kernel_in_process(const lf_build_request_t *request,
                                       lf_build_result_t **out_result);

/// Appends the repair message for a failed result: kind and message, the
/// diagnostics and the hint, at most LF_BUILD_REPAIR_CAP bytes in all. For
/// an OK result, appends nothing. Fails only if `out` is full.
lf_status_t lf_build_result_repair_text(const lf_build_result_t *result,
                                        lf_strbuf_t *out);

/// Serializes `result` as a JSON object (without the PTX and cubin bytes,
/// whose sizes it gives; pass their file paths to name them). The caller
/// frees *out_json.
lf_status_t lf_build_result_to_json(const lf_build_result_t *result,
                                    const char *ptx_path,
                                    const char *cubin_path, char **out_json);

/// Parses the JSON that lf_build_result_to_json() wrote into a new result
/// (PTX and cubin left empty). INVALID_ARGUMENT on malformed input; a
/// result of kind "internal" (written by the tool when it could not judge
/// the candidate) becomes an INTERNAL status carrying its message.
lf_status_t lf_build_result_from_json(const char *json, size_t size,
                                      lf_build_result_t **out_result);

/// Writes a result into folder `dir` (created if missing) as the
/// verification worker reads a candidate: kernel.ptx, kernel.cubin (when
/// there is one), then result.json naming them, written last so that its
/// presence says the folder is complete. `*out_json` (may be NULL) receives
/// the result.json text, malloc'ed.
lf_status_t lf_build_result_write_dir(const lf_build_result_t *result,
                                      const char *dir, char **out_json);

/// The versions of everything that turns kernel text into a binary, for
/// cache keys: "llvm-22.1.8;ptxas-13.0.88" ("ptxas-none" without ptxas).
/// The ptxas is the one builds use. Computed once per process.
const char *lf_build_toolchain(void);

/// A fatbin of a successful result's cubin and PTX (the driver can JIT the
/// PTX for a newer GPU), made by the toolkit's fatbinary (beside the ptxas
/// builds use, or $LLM_FUSE_FATBINARY). NOT_FOUND without fatbinary. The
/// caller frees *out_data.
lf_status_t lf_build_fatbin(const lf_build_result_t *result, char **out_data,
                            size_t *out_size);

/// Finds the llm-fuse-build-kernel executable as lf_build_kernel() does
/// (env override, then beside this library's binary). Writes a malloc'ed
/// path to *out_path; NOT_FOUND says where it looked.
lf_status_t lf_build_find_tool(char **out_path);

#ifdef __cplusplus
}
#endif

#endif /* LF_BUILDER_BUILDER_H */
