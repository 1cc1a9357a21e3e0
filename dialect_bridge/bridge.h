/* bridge.h - the C face of dialect_bridge/, the small C++ layer.
 *
 * The MLIR C API cannot register passes with options into MLIR's global pass
 * registry, nor emit remarks and warnings; these few functions do that in
 * C++ and are callable from the C passes.
 */
#ifndef LF_DIALECT_BRIDGE_BRIDGE_H
#define LF_DIALECT_BRIDGE_BRIDGE_H

#include "base/status.h"
#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lf_diag_severity_e {
  LF_DIAG_ERROR,
  LF_DIAG_WARNING,
  LF_DIAG_REMARK,
} lf_diag_severity_t;

/// Emits a diagnostic at `loc` through the context's diagnostic engine (so
/// it is located, and `-verify-diagnostics` and handlers see it).
void lf_emit_diag(MlirLocation loc, lf_diag_severity_t severity,
                  const char *message);

/// Emits `status` as an error at `loc` (its message; its code and origin are
/// logged at debug level). Borrows `status`. Does nothing for OK.
void lf_emit_status(MlirLocation loc, lf_status_t status);

/// Registers every pass of lf_all_passes() with MLIR's global pass registry.
/// Idempotent.
void lf_register_passes(void);

#ifdef __cplusplus
}
#endif

#endif /* LF_DIALECT_BRIDGE_BRIDGE_H */
