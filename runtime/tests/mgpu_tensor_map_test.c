/* mgpu_tensor_map_test.c - libllm_fuse_rt's exported tensor-map encoder
 * (lf_rt_tensor_map_encode) against the fake driver, as the host IR of a
 * swapped launch uses it (passes/swap.c): encode on the buffer's device
 * pointer, pass the 128 bytes as the kernel argument (args[i] points at
 * them), launch. A map that does not encode is kept as the runtime's first
 * error and the launch that follows is skipped. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/testing.h"
#include "runtime/mgpu/llm_fuse_rt.h"

void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy, intptr_t gz,
                      intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                      void *stream, void **params, void **extra,
                      size_t num_params);

static void *fake;

/* Launch record i of the fake (FAKE_CUDA_RECORD): its bytes, or -1. */
static int record(int i, unsigned char *out, size_t cap) {
  int (*f)(int, unsigned char *, size_t) =
      (int (*)(int, unsigned char *, size_t))dlsym(fake, "fake_launch_record");
  return f ? f(i, out, cap) : -1;
}

LF_TEST(the_map_is_encoded_on_the_pointer_and_passed_by_value) {
  void *buf = NULL;
  LF_EXPECT(lf_rt_malloc(&buf, 64 * 256 * 2) == 0 && buf);
  void *mod = mgpuModuleLoad("fake image", 10);
  void *fn = mgpuModuleGetFunction(mod, "tma_kernel");
  LF_EXPECT(lf_rt_status() == 0 && fn);
  if (lf_rt_status())
    fprintf(stderr, "  %s\n", lf_rt_last_error());

  uint64_t dims[2] = {64, 256};
  uint32_t box[2] = {16, 64};
  unsigned char map[LF_RT_TENSOR_MAP_BYTES];
  LF_EXPECT(lf_rt_tensor_map_encode(map, buf, LF_RT_DTYPE_BF16, 2, dims, box,
                                    128, 0, 0) == 0);
  unsigned long long q[16];
  memcpy(q, map, sizeof(q));
  LF_EXPECT(q[0] == (unsigned long long)(uintptr_t)buf);
  LF_EXPECT(!memcmp(&q[1], "FAKETMAP", 8));
  /* rank 2, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 (9), SWIZZLE_128B (3) */
  LF_EXPECT(q[2] == (2 | 9ull << 8 | 3ull << 16));
  LF_EXPECT(q[3] == 256 && q[4] == 64); /* dims, innermost first */
  LF_EXPECT(q[8] == 64 && q[9] == 16);  /* box, innermost first */

  /* args = {&pointer, map}: the kernel gets the pointer and the 128 bytes */
  void *ptr = buf;
  void *params[2] = {&ptr, map};
  mgpuLaunchKernel(fn, 4, 1, 1, 128, 1, 1, 0, NULL, params, NULL, 2);
  LF_EXPECT(lf_rt_status() == 0);
  unsigned char rec[8 + LF_RT_TENSOR_MAP_BYTES];
  LF_EXPECT(record(0, rec, sizeof(rec)) == (int)sizeof(rec));
  LF_EXPECT(!memcmp(rec, &ptr, 8));
  LF_EXPECT(!memcmp(rec + 8, map, LF_RT_TENSOR_MAP_BYTES));
  lf_rt_free(buf);
}

/* Last: the error is sticky for the process. */
LF_TEST(a_map_that_does_not_encode_is_the_first_error_and_stops_the_launch) {
  void *mod = mgpuModuleLoad("fake image", 10);
  void *fn = mgpuModuleGetFunction(mod, "tma_kernel");
  uint64_t dims[2] = {64, 256};
  uint32_t box[2] = {16, 4}; /* 8 bytes of bf16: TMA needs 16 */
  unsigned char map[LF_RT_TENSOR_MAP_BYTES];
  memset(map, 0xAB, sizeof(map));
  LF_EXPECT(lf_rt_tensor_map_encode(map, (void *)0x10000, LF_RT_DTYPE_BF16, 2,
                                    dims, box, 0, 0, 0) != 0);
  LF_EXPECT(lf_rt_status() != 0);
  const char *e = lf_rt_last_error();
  LF_EXPECT(e && strstr(e, "lf_rt_tensor_map_encode") &&
            strstr(e, "inner extent is 8 bytes"));
  static const unsigned char zero[LF_RT_TENSOR_MAP_BYTES];
  LF_EXPECT(!memcmp(map, zero, sizeof(zero)));
  void *ptr = (void *)0x10000;
  void *params[2] = {&ptr, map};
  mgpuLaunchKernel(fn, 4, 1, 1, 128, 1, 1, 0, NULL, params, NULL, 2);
  unsigned char rec[8 + LF_RT_TENSOR_MAP_BYTES];
  LF_EXPECT(record(1, rec, sizeof(rec)) == -1); /* not launched */
}

int main(void) {
  setenv("LLM_FUSE_LIBCUDA", FAKE_LIBCUDA, 1);
  setenv("FAKE_CUDA_MODULE_ERROR", "0", 1);
  setenv("FAKE_CUDA_LAUNCH_OK", "1", 1);
  setenv("FAKE_CUDA_RECORD", "tma_kernel:8,128", 1);
  setenv("LLM_FUSE_RT_QUIET", "1", 1);
  fake = dlopen(FAKE_LIBCUDA, RTLD_NOW);
  LF_EXPECT(fake != NULL);
  if (!fake)
    return lf_test_finish();
  LF_RUN(the_map_is_encoded_on_the_pointer_and_passed_by_value);
  LF_RUN(a_map_that_does_not_encode_is_the_first_error_and_stops_the_launch);
  return lf_test_finish();
}
