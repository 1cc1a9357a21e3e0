/* driver.c - runs the ahead-of-time compiled TMA copy (bench/tma/prepare.sh:
 * the swapped @copy, whose host code encodes the kernel's tensor map with
 * lf_rt_tensor_map_encode before the launch) once on the GPU and checks
 * that the output is the input, bit for bit. Links against model.o and
 * libllm_fuse_rt alone. Prints one PASS/FAIL line; exit 0 on PASS. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

int main(void) {
  enum { N = 256 * 256 };
  uint16_t *host = malloc(N * 2), *back = malloc(N * 2);
  void *in = NULL, *out = NULL;
  if (!host || !back)
    return 1;
  for (uint32_t i = 0; i < N; ++i) /* distinct bf16 bit patterns */
    host[i] = (uint16_t)(0x3c00u + (i * 2654435761u >> 20) % 0x1800u);
  memset(back, 0, N * 2);
  if (lf_rt_malloc(&in, N * 2) || lf_rt_malloc(&out, N * 2) ||
      lf_rt_copy_to_device(in, host, N * 2) ||
      lf_rt_copy_to_device(out, back, N * 2) || copy_run(in, out) ||
      lf_rt_copy_to_host(back, out, N * 2)) {
    printf("FAIL aot-run: %s\n", lf_rt_last_error() ? lf_rt_last_error()
                                                    : "unknown error");
    return 1;
  }
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < N; ++i)
    if (back[i] != host[i] && !bad++)
      first = i;
  if (bad) {
    printf("FAIL aot-run: %zu of %d elements differ (first at %zu: got 0x%04x, "
           "want 0x%04x)\n",
           bad, N, first, back[first], host[first]);
    return 1;
  }
  printf("PASS aot-run: the swapped TMA copy wrote all %d elements "
         "(tensor map encoded by lf_rt_tensor_map_encode)\n",
         N);
  lf_rt_free(in);
  lf_rt_free(out);
  return 0;
}
