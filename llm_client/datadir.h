/* datadir.h - finding llm_client's data folders (prompt templates, the
 * shipped replay set) the same way wherever the code runs.
 *
 * Order: an environment variable; then share/llm-fuse/<name> beside the
 * binary or shared library that holds this code (<dir>/../share/...), the
 * installed layout; then a path fixed at compile time (the source tree),
 * so a build works in place with nothing installed.
 */
#ifndef LF_LLM_CLIENT_DATADIR_H
#define LF_LLM_CLIENT_DATADIR_H

#include "base/status.h"
#include "base/strbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Appends the folder for data `share_name` ("prompts", "replay") to `out`:
/// $`env_var` when set and non-empty (used as is, even if missing, so a
/// typo shows up as a clear NOT_FOUND later), else
/// <binary dir>/../share/llm-fuse/<share_name> when it is a folder, else
/// `compiled`. RESOURCE_EXHAUSTED only when `out` is full.
lf_status_t lf_llm_data_dir(const char *env_var, const char *share_name,
                            const char *compiled, lf_strbuf_t *out);

#ifdef __cplusplus
}
#endif

#endif /* LF_LLM_CLIENT_DATADIR_H */
