/* internal.h - what the kernel builder's files share; not a public API.
 *
 * builder.c runs the stages, contract.c checks the kernel contract,
 * codegen.c turns lowered IR into PTX and a cubin, child.c runs processes,
 * server.c is the pre-started build server those processes fork from,
 * prune.c drops a template's untaken tiling branches before the lowering,
 * result.c owns results, diagnostics and their caps.
 */
#ifndef LF_BUILDER_INTERNAL_H
#define LF_BUILDER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "builder/builder.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Diagnostics (result.c) ----------------------------------------------
 * The one place where foreign errors (MLIR diagnostics, LLVM messages, ptxas
 * output) become the capped, reply-relative text of a result. */

typedef struct lf_diag_sink_s {
  lf_strbuf_t text;   /* capped at LF_BUILD_DIAGNOSTICS_CAP - reserve */
  size_t dropped;     /* entries that did not fit */
  int errors;         /* error entries seen (kept or dropped) */
  int line_offset;    /* added to every line number */
  const char *source; /* the kernel text, borrowed, for excerpts */
  size_t source_size;
  char first[LF_BUILD_MESSAGE_CAP];     /* the first error, located */
  char first_raw[LF_BUILD_MESSAGE_CAP]; /* the first error's bare message */
} lf_diag_sink_t;

/// Initializes `sink` for diagnostics about `source` (borrowed).
void lf_diag_sink_init(lf_diag_sink_t *sink, const char *source,
                       size_t source_size, int line_offset);

/// Frees the sink's text. Accepts NULL.
void lf_diag_sink_free(lf_diag_sink_t *sink);

/// Adds one entry "reply:L:C: <severity>: <message>" (line 0: unlocated,
/// "<severity>: <message>"),
/// followed for errors by the offending source line. `message` is cut at
/// its first newline and at a fixed width.
void lf_diag_sink_add(lf_diag_sink_t *sink, const char *severity, int line,
                      int col, const char *message, size_t message_size);

/// Adds the first `max_lines` non-empty lines of foreign tool output (LLVM,
/// ptxas, a crashed child's log) as unlocated entries; lines containing
/// "error" first when `errors_first`.
void lf_diag_sink_add_output(lf_diag_sink_t *sink, const char *output,
                             size_t size, int max_lines, bool errors_first);

/// The MLIR diagnostic handler: user_data is an lf_diag_sink_t. Records
/// errors (with up to two notes) and warnings; drops remarks.
MlirLogicalResult lf_diag_sink_handler(MlirDiagnostic diagnostic,
                                       void *user_data);

/// Moves the collected text (plus "(N more not shown)") into a new string.
char *lf_diag_sink_take(lf_diag_sink_t *sink);

/* ---- Results (result.c) -------------------------------------------------- */

/// A new, empty OK result, or NULL when memory runs out.
lf_build_result_t *lf_build_result_new(void);

/// Sets result->kind, ->message (printf, capped) and the default hint for
/// the kind (unless a hint is already set). Returns the result's status of
/// allocation (out of memory only).
lf_status_t lf_build_result_fail(lf_build_result_t *result,
                                 lf_build_kind_t kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/// Replaces *dst with a copy of `text` cut at `cap` bytes (UTF-8 safe, with
/// "..." when cut). NULL text sets "".
lf_status_t lf_set_capped(char **dst, const char *text, size_t cap);

/// The default repair hint of a kind.
const char *lf_build_kind_hint(lf_build_kind_t kind);

/* ---- Expected signature (contract.c) ------------------------------------- */

typedef struct lf_signature_s {
  size_t num_inputs;
  size_t num_results;
  MlirType *types; /* expected kernel argument types: inputs, then results */
  char **texts;    /* the same, printed */
  bool *pointer;   /* memref (pointer) or scalar */
} lf_signature_t;

/// Parses `text`, a function type over ranked static tensors and scalars
/// (int, float, index), into the kernel arguments it asks for.
/// INVALID_ARGUMENT when the text is not such a type.
lf_status_t lf_signature_parse(MlirContext ctx, const char *text,
                               lf_signature_t *out);

/// Frees what lf_signature_parse() made. Accepts NULL.
void lf_signature_free(lf_signature_t *sig);

/* ---- Contract (contract.c) ----------------------------------------------- */

/* The most tensor maps a kernel may ask for (128 bytes of parameter space
 * each; a kernel has 4 KiB in all). */
#define LF_MAX_TENSOR_MAPS 16
#define LF_TENSOR_MAP_TYPE_CAP 384

typedef struct lf_contract_info_s {
  MlirOperation gpu_module; /* borrowed from the module checked */
  MlirOperation kernel;
  char kernel_name[256];
  uint32_t block[3];
  uint32_t grid[3];
  uint32_t dynamic_shared_bytes;
  bool needs_sm90a;    /* uses wgmma / setmaxnreg */
  uint32_t cluster[3]; /* compile-time cluster shape, {0, 0, 0} if none */
  char first_rule[48]; /* the first rule broken, "" if none */
  int violations;      /* rules broken */
  int reported;        /* of which emitted as diagnostics (capped) */
  /* Tensor maps (docs/kernel-contract.md, "Tensor maps"): the kernel's
   * trailing arguments from first_map on, valid when violations == 0. */
  size_t first_map;
  size_t num_maps;
  lf_tensor_map_spec_t maps[LF_MAX_TENSOR_MAPS];
  char map_types[LF_MAX_TENSOR_MAPS][LF_TENSOR_MAP_TYPE_CAP];
} lf_contract_info_t;

/// Checks the parsed, verified `module` against the contract for `sig` and
/// `chip`. Each violation is emitted with mlirEmitError as
/// "[rule] message" at the op's location and counted in out->violations.
/// Returns non-OK only for internal errors.
lf_status_t lf_contract_check(MlirModule module, const lf_signature_t *sig,
                              const char *chip, bool allow_inline_asm,
                              lf_contract_info_t *out);

/// Checks the lowered gpu.module: no calls to external functions other than
/// libdevice's __nv_*, no mutable globals outside shared memory. Adds to
/// info->violations like lf_contract_check().
void lf_contract_check_lowered(lf_contract_info_t *info);

/// The repair hint for a rule name (from "[rule]"), NULL when unknown.
/// `sig` lets the signature hint spell out the expected arguments.
char *lf_contract_rule_hint(const char *rule, const lf_signature_t *sig);

/* ---- Code generation (codegen.c) ----------------------------------------- */

/// Translates the lowered gpu.module to LLVM IR, links `libdevice` (a
/// bitcode path, NULL when there is none) when math ops need it, marks the
/// kernel's pointer parameters noalias and 16-byte aligned, makes the
/// `num_maps` tensor-map parameters from `first_map` on 128-byte byval grid
/// constants aligned to 64, optimizes at O3 and emits PTX for `chip`. A
/// failure of the candidate sets result->kind (lowering) with diagnostics in
/// `sink`; returns non-OK only for internal errors.
lf_status_t lf_codegen_ptx(MlirOperation gpu_module, const char *kernel_name,
                           const char *chip, const char *libdevice,
                           size_t first_map, size_t num_maps,
                           lf_diag_sink_t *sink, lf_build_result_t *result);

/// Assembles result->ptx with ptxas into result->cubin. A ptxas rejection
/// sets result->kind to ptxas.
lf_status_t lf_codegen_cubin(const char *ptxas_path, const char *chip,
                             lf_diag_sink_t *sink, lf_build_result_t *result);

/// The ptxas to use: `requested`, else $LLM_FUSE_PTXAS, else a search of
/// $CUDA_HOME, $CUDA_PATH, /usr/local/cuda and PATH. *out_path is malloc'ed,
/// or NULL when the search finds none; NOT_FOUND when an explicitly named
/// one (request or environment) is not executable.
lf_status_t lf_find_ptxas(const char *requested, char **out_path);

/// The libdevice bitcode, found like ptxas ($LLM_FUSE_LIBDEVICE, then
/// nvvm/libdevice/libdevice.10.bc under the CUDA roots).
lf_status_t lf_find_libdevice(const char *requested, char **out_path);

/* ---- Constant branches (prune.c) ---------------------------------------- */

/// Replaces every scf.if under `root` whose condition is a constant i1 or an
/// arith.cmpi eq / ne of two integer constants by the body of its taken
/// branch (a template's tiling switch). Returns how many were folded.
int lf_prune_constant_branches(MlirOperation root);

/* ---- Processes (child.c) ------------------------------------------------- */

typedef struct lf_subprocess_s {
  const char *const *argv; /* argv[0] is the executable's path */
  const char *output_path; /* stdout and stderr go here; NULL: /dev/null */
  int64_t timeout_ms;      /* <= 0: no limit */
  int64_t memory_bytes;    /* RLIMIT_AS; <= 0: inherited */
  int64_t cpu_seconds;     /* RLIMIT_CPU; <= 0: inherited */
  bool same_group;         /* stay in our process group (a helper such as
                              ptxas, killed with ours); default: a new one */
} lf_subprocess_t;

typedef struct lf_subprocess_outcome_s {
  bool timed_out; /* killed by us at the deadline */
  bool signaled;  /* died of a signal (not ours) */
  int signal;     /* which */
  int exit_code;  /* when it exited */
  double ms;      /* wall time */
  double cpu_ms;  /* user + system time of the process and the children it
                     reaped (a build's ptxas) */
} lf_subprocess_outcome_t;

/// Runs argv (in a new process group unless spec->same_group) with stdin
/// from /dev/null, limits set before exec and SIGKILL on our death, and
/// waits for it. At the deadline and when it ends, its whole group is
/// killed. Non-OK only if the process could not be started.
lf_status_t lf_subprocess_run(const lf_subprocess_t *spec,
                              lf_subprocess_outcome_t *out);

/// A build child's resource limits, set between its fork and its exec (or
/// run): address space, CPU (SIGXCPU at cpu_seconds, SIGKILL a second
/// later), no core dumps, an 8 MiB stack. Async-signal-safe. (child.c)
void lf_child_limits(int64_t memory_bytes, int64_t cpu_seconds);

/* ---- The build server (server.c) ---------------------------------------- */

/// The tool's main(), run by each build the server forks.
typedef int (*lf_build_server_fn_t)(int argc, char **argv);

/// The server loop of `llm-fuse-build-kernel --serve FD` (server.c's file
/// comment): receives per-build sockets on `ctl` and forks a runner for
/// each, which forks the build (running `run` on the request's argv) with
/// spec's limits. Returns 0 when the other end of `ctl` closes.
int lf_build_server_main(int ctl, lf_build_server_fn_t run);

/// Runs spec (the argv of `tool --in-process ...`) as a fork of this
/// process's build server, starting the server (`tool --serve 3`) on first
/// use. True: *out says how it ended, as lf_subprocess_run() would. False:
/// not served (LLM_FUSE_BUILD_SERVER=0, a server that cannot start or has
/// died, another tool): nothing of the build ran; run a plain child.
/// Thread-safe.
bool lf_build_server_run(const char *tool, const lf_subprocess_t *spec,
                         lf_subprocess_outcome_t *out);

/// Builds served and fallen back in this process, and the server's pid (0
/// when none is up or none has reported yet); for tests. NULLs allowed.
void lf_build_server_stats(int *out_served, int *out_fallbacks,
                           int *out_server_pid);

/// Monotonic milliseconds.
double lf_now_ms(void);

/// Writes `size` bytes to `path` (created 0644, truncated; no fsync: for
/// private temporary files).
lf_status_t lf_write_file_plain(const char *path, const void *data,
                                size_t size);

#ifdef __cplusplus
}
#endif

#endif /* LF_BUILDER_INTERNAL_H */
