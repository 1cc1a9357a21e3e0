/* aot_shim.c - a shared-library face for a model compiled ahead of time by
 * llm-fuse-compile, so that bench/gpu/run.py can call it through ctypes in
 * the same process as torch (issue 8: the MiniGPT block end to end).
 *
 *   cc -std=c17 -shared -fPIC -I. -DENTRY=minigpt_block -DHEADER='"m.h"' \
 *      aot_shim.c m.o -L. -lllm_fuse_rt -o m.so
 *
 * The header's <ENTRY>_run is static inline, so it is not in the object;
 * this file exports it as lf_bench_run_packed. Device pointers only; the
 * call returns when the results are written (the model synchronizes its
 * own stream).
 */
#include HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/// Runs ENTRY on device buffers, inputs then outputs, as the header's
/// <ENTRY>_run_packed. Borrows `args`. Returns 0, else lf_rt_status() (the
/// message is in lf_rt_last_error()).
int lf_bench_run_packed(void *const *args);

/// Number of buffers lf_bench_run_packed takes (inputs + outputs).
int lf_bench_num_args(void);

int lf_bench_run_packed(void *const *args) {
  return CAT(ENTRY, _run_packed)(args);
}

int lf_bench_num_args(void) {
  return (int)(CAT(ENTRY, _num_inputs) + CAT(ENTRY, _num_outputs));
}
