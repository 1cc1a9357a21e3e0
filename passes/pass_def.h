/* pass_def.h - how a C pass of llm-fuse describes itself.
 *
 * Each pass is a static lf_pass_def_t: its pipeline argument, description,
 * the op it runs on, a table of options, and a run function written on the
 * MLIR C API. Two hosts run these definitions:
 *
 *  - dialect_bridge/ registers every definition with MLIR's pass registry, so
 *    the pass is a flag of llm-fuse-opt and a `--pass-pipeline` element in
 *    mlir-opt-22 with the plugin loaded. It exposes the option table as real
 *    pass options, so `--help` lists them with their descriptions.
 *  - lf_pass_create_external() wraps a definition in an MLIR C API external
 *    pass (mlirCreateExternalPass), for C programs that build their own pass
 *    managers.
 *
 * Options are parsed and validated here, in C, whichever host runs the pass.
 */
#ifndef LF_PASSES_PASS_DEF_H
#define LF_PASSES_PASS_DEF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lf_option_type_e {
  LF_OPTION_STRING, /* stored as char * (owned, never NULL) */
  LF_OPTION_INT,    /* stored as int64_t */
  LF_OPTION_DOUBLE, /* stored as double */
  LF_OPTION_BOOL,   /* stored as bool */
} lf_option_type_t;

/// One pass option. `choices` (NULL-terminated) restricts a string option to
/// a fixed set; numeric options are checked against [min, max].
typedef struct lf_option_def_s {
  const char *name;
  lf_option_type_t type;
  const char *default_text; /* parsed like a user value */
  const char *description;
  const char *const *choices;
  double min, max;
  size_t offset; /* of the field in the pass's options struct */
} lf_option_def_t;

/// A pass written in C.
typedef struct lf_pass_def_s {
  const char *argument;    /* pipeline name, e.g. "llm-fuse" */
  const char *name;        /* display name, e.g. "LLMFusePass" */
  const char *description; /* one line for --help */
  const char *op_name;     /* op it is scheduled on, e.g. "builtin.module" */
  const lf_option_def_t *options;
  size_t num_options;
  size_t options_size; /* sizeof the options struct */
  /// Optional: a textual pass pipeline (nested in `op_name`'s syntax, e.g.
  /// "func.func(tosa-to-linalg)") the host runs on `op` before `run`, or
  /// NULL for none. Used to import TOSA with the upstream passes.
  const char *(*pre_pipeline)(MlirOperation op, const void *options);
  /// Runs the pass on `op` with validated `options`. A non-OK status fails
  /// the pass; the host reports it as an error located at `op`. The run
  /// function may emit more precise diagnostics itself before failing.
  lf_status_t (*run)(MlirOperation op, const void *options);
} lf_pass_def_t;

/// Fills `options` (def->options_size bytes) with the defaults.
lf_status_t lf_pass_options_init(const lf_pass_def_t *def, void *options);

/// Frees what `options` owns (strings) and zeroes it. Accepts NULL.
void lf_pass_options_free(const lf_pass_def_t *def, void *options);

/// Deep-copies `src` into uninitialized `dst`.
lf_status_t lf_pass_options_copy(const lf_pass_def_t *def, void *dst,
                                 const void *src);

/// Sets option `name` from its textual form, validating type, range and
/// choices. On failure `options` is unchanged and the status names the
/// option, the bad value and what is accepted.
lf_status_t lf_pass_options_set(const lf_pass_def_t *def, void *options,
                                const char *name, const char *value);

/// Parses "name=value name2=value2 ..." (the syntax inside `llm-fuse{...}`;
/// values may be quoted with ' or " or {}) into initialized `options`.
lf_status_t lf_pass_options_parse(const lf_pass_def_t *def, void *options,
                                  const char *text);

/// Looks up an option definition by name; NULL if none.
const lf_option_def_t *lf_pass_find_option(const lf_pass_def_t *def,
                                           const char *name);

/// All passes of llm-fuse, in registration order. `*out_count` receives the
/// number of entries.
const lf_pass_def_t *const *lf_all_passes(size_t *out_count);

/// Wraps `def` in an MLIR C API external pass configured with `options_text`
/// (same syntax as lf_pass_options_parse; NULL for defaults). On success
/// `*out_pass` is an owned MlirPass to hand to mlirOpPassManagerAddOwnedPass.
lf_status_t lf_pass_create_external(const lf_pass_def_t *def,
                                    const char *options_text,
                                    MlirPass *out_pass);

#ifdef __cplusplus
}
#endif

#endif /* LF_PASSES_PASS_DEF_H */
