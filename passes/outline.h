/* outline.h - outlining of fusable subgraphs and the `llm-fuse-outline`
 * pass. The partition rules are in partition.c. */
#ifndef LF_PASSES_OUTLINE_H
#define LF_PASSES_OUTLINE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/strbuf.h"
#include "passes/pass_def.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The upstream passes that import TOSA into linalg on tensors, run inside
/// our pipeline when a module holds TOSA ops.
#define LF_TOSA_IMPORT_PIPELINE                                                \
  "func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor)"

/// Attributes of an outlined subgraph function.
#define LF_ATTR_CLASS "llm_fuse.class"
#define LF_ATTR_FINGERPRINT "llm_fuse.fingerprint"
#define LF_ATTR_PATTERN "llm_fuse.pattern"

typedef struct lf_outline_options_s {
  size_t max_group_ops;
  bool remarks;
} lf_outline_options_t;

/// Partitions every function of `module` and outlines each group. When
/// `report_groups` (a cJSON array) is given, one record per subgraph is
/// appended. `*out_count` receives the number of outlined subgraphs.
lf_status_t lf_outline_module(MlirOperation module,
                              const lf_outline_options_t *options,
                              cJSON *report_groups, size_t *out_count);

/// Appends the text of outlined function `func` that a prompt may show: the
/// custom (readable) form with no locations, no discardable attributes and
/// no user text attributes (doc, library_call), the function named
/// `subgraph`. User-chosen names and comments cannot reach a prompt.
lf_status_t lf_outline_prompt_text(MlirOperation func, lf_strbuf_t *out);

/// LF_TOSA_IMPORT_PIPELINE if `module` holds TOSA ops, else NULL.
const char *lf_tosa_import_pipeline(MlirOperation module);

/// Writes `root` as indented JSON to `path` atomically.
lf_status_t lf_write_json_report(const char *path, cJSON *root);

/// The `llm-fuse-outline` pass.
extern const lf_pass_def_t lf_outline_pass;

#ifdef __cplusplus
}
#endif

#endif /* LF_PASSES_OUTLINE_H */
