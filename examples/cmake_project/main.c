/* main.c - calls the ahead-of-time compiled MLP block (mlp_model.h, made by
 * llm_fuse_add_model in CMakeLists.txt) on device buffers of bf16 ones and
 * prints a checksum of the result. Without a GPU it says why and exits 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "mlp_model.h"

int main(void) {
  enum { N = mlp_block_num_inputs + mlp_block_num_outputs };
  void *dev[N] = {0};
  int rc = 1;
  if (lf_rt_init())
    goto out;
  for (size_t i = 0; i < N; ++i) {
    size_t bytes = mlp_block_arg_bytes(i);
    uint16_t *host = malloc(bytes);
    if (!host)
      goto out;
    for (size_t k = 0; k < bytes / 2; ++k)
      host[k] = 0x3f80; /* bf16 1.0 */
    int err = lf_rt_malloc(&dev[i], bytes) ||
              lf_rt_copy_to_device(dev[i], host, bytes);
    free(host);
    if (err)
      goto out;
  }
  if (mlp_block_run_packed(dev))
    goto out;
  size_t out_bytes = mlp_block_arg_bytes(mlp_block_num_inputs);
  uint16_t *y = malloc(out_bytes);
  if (!y || lf_rt_copy_to_host(y, dev[mlp_block_num_inputs], out_bytes)) {
    free(y);
    goto out;
  }
  uint64_t sum = 0;
  for (size_t k = 0; k < out_bytes / 2; ++k)
    sum += y[k];
  free(y);
  printf("mlp_block: %zu bf16 values, bit sum %llu\n", out_bytes / 2,
         (unsigned long long)sum);
  rc = 0;
out:
  if (rc)
    fprintf(stderr, "mlp_demo: %s\n",
            lf_rt_last_error() ? lf_rt_last_error() : "out of memory");
  for (size_t i = 0; i < N; ++i)
    lf_rt_free(dev[i]);
  return rc;
}
