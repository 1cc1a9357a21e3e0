/* passes.c - the list of llm-fuse's passes, in registration order. */
#include "passes/llm_fuse.h"
#include "passes/outline.h"
#include "passes/pass_def.h"

static const lf_pass_def_t *const all_passes[] = {
    &lf_llm_fuse_pass,
    &lf_outline_pass,
};

const lf_pass_def_t *const *lf_all_passes(size_t *out_count) {
  *out_count = sizeof(all_passes) / sizeof(all_passes[0]);
  return all_passes;
}
