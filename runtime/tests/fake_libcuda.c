/* fake_libcuda.c - a stand-in libcuda.so.1 for CPU-only tests of runtime/.
 *
 * FAKE_CUDA_DEVICES=N (default 1) sets how many devices it reports; 0 makes
 * cuInit fail the way a driver without a GPU does. Built twice: once whole,
 * once without cuDeviceTotalMem_v2 (FAKE_OMIT_TOTALMEM) to test the
 * missing-entry-point path. Declarations are written out, not taken from
 * cuda.h, so the fake builds without the toolkit.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

static int devices(void) {
  const char *n = getenv("FAKE_CUDA_DEVICES");
  return n ? atoi(n) : 1;
}

EXPORT int cuInit(unsigned int flags) {
  (void)flags;
  return devices() > 0 ? 0 : 100; /* CUDA_ERROR_NO_DEVICE */
}
EXPORT int cuDriverGetVersion(int *v) {
  *v = 13000;
  return 0;
}
EXPORT int cuGetErrorName(int e, const char **name) {
  if (e == 100) {
    *name = "CUDA_ERROR_NO_DEVICE";
    return 0;
  }
  if (e == 101) {
    *name = "CUDA_ERROR_INVALID_DEVICE";
    return 0;
  }
  *name = NULL;
  return 1; /* CUDA_ERROR_INVALID_VALUE */
}
EXPORT int cuGetErrorString(int e, const char **text) {
  if (e == 100) {
    *text = "no CUDA-capable device is detected";
    return 0;
  }
  if (e == 101) {
    *text = "invalid device ordinal";
    return 0;
  }
  *text = NULL;
  return 1;
}
EXPORT int cuDeviceGetCount(int *count) {
  *count = devices();
  return 0;
}
EXPORT int cuDeviceGet(int *dev, int ordinal) {
  if (ordinal < 0 || ordinal >= devices())
    return 101;
  *dev = ordinal;
  return 0;
}
EXPORT int cuDeviceGetName(char *name, int len, int dev) {
  snprintf(name, (size_t)len, "Fake H200 #%d", dev);
  return 0;
}
EXPORT int cuDeviceGetAttribute(int *value, int attribute, int dev) {
  (void)dev;
  switch (attribute) {
  case 75: *value = 9; return 0;   /* compute capability major */
  case 76: *value = 0; return 0;   /* minor */
  case 16: *value = 132; return 0; /* multiprocessors */
  default: return 1;
  }
}
#ifndef FAKE_OMIT_TOTALMEM
EXPORT int cuDeviceTotalMem_v2(size_t *bytes, int dev) {
  (void)dev;
  *bytes = (size_t)141 << 30;
  return 0;
}
#endif
