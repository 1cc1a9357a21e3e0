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
  case 13: *value = 1980000; return 0; /* clock rate, kHz */
  case 38: *value = 50 << 20; return 0; /* L2 bytes */
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

/* Contexts, modules, memory, streams and events. Device memory is host
 * memory (a CUdeviceptr is a host address), so the runtime's bookkeeping
 * can be tested without a GPU. Modules never load: FAKE_CUDA_MODULE_ERROR
 * (default 200, CUDA_ERROR_INVALID_IMAGE) is what cuModuleLoadData*
 * returns (0: they load, and functions are found); launches fail with
 * CUDA_ERROR_INVALID_VALUE (1), or do nothing and succeed when
 * FAKE_CUDA_LAUNCH_OK is set. */
#include <string.h>
typedef unsigned long long fake_ptr;
static int fake_ctx_token;
EXPORT int cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  (void)dev;
  *ctx = &fake_ctx_token;
  return 0;
}
EXPORT int cuDevicePrimaryCtxRelease_v2(int dev) {
  (void)dev;
  return 0;
}
EXPORT int cuCtxSetCurrent(void *ctx) {
  (void)ctx;
  return 0;
}
EXPORT int cuCtxGetCurrent(void **ctx) {
  *ctx = &fake_ctx_token;
  return 0;
}
EXPORT int cuCtxPushCurrent_v2(void *ctx) {
  (void)ctx;
  return 0;
}
EXPORT int cuCtxPopCurrent_v2(void **ctx) {
  if (ctx)
    *ctx = &fake_ctx_token;
  return 0;
}
EXPORT int cuCtxSynchronize(void) { return 0; }
static int module_error(void) {
  const char *e = getenv("FAKE_CUDA_MODULE_ERROR");
  return e ? atoi(e) : 200;
}
EXPORT int cuModuleLoadData(void **mod, const void *image) {
  (void)image;
  *mod = NULL;
  return module_error();
}
EXPORT int cuModuleLoadDataEx(void **mod, const void *image, unsigned int n,
                              int *options, void **values) {
  (void)n, (void)options, (void)values;
  return cuModuleLoadData(mod, image);
}
EXPORT int cuModuleUnload(void *mod) {
  (void)mod;
  return 0;
}
EXPORT int cuModuleGetFunction(void **f, void *mod, const char *name) {
  (void)mod, (void)name;
  *f = module_error() ? NULL : &fake_ctx_token;
  return module_error() ? 500 : 0; /* CUDA_ERROR_NOT_FOUND */
}
EXPORT int cuFuncGetAttribute(int *v, int attr, void *f) {
  (void)attr, (void)f;
  *v = 0;
  return 0;
}
EXPORT int cuFuncSetAttribute(void *f, int attr, int v) {
  (void)f, (void)attr, (void)v;
  return 0;
}
EXPORT int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, unsigned by, unsigned bz, unsigned smem,
                          void *stream, void **params, void **extra) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz;
  (void)smem, (void)stream, (void)params, (void)extra;
  return getenv("FAKE_CUDA_LAUNCH_OK") ? 0 : 1; /* CUDA_ERROR_INVALID_VALUE */
}
EXPORT int cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  *free_bytes = (size_t)1 << 30;
  *total = (size_t)141 << 30;
  return 0;
}
EXPORT int cuMemAlloc_v2(fake_ptr *p, size_t bytes) {
  void *m = malloc(bytes ? bytes : 1);
  if (!m)
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  *p = (fake_ptr)(size_t)m;
  return 0;
}
EXPORT int cuMemFree_v2(fake_ptr p) {
  free((void *)(size_t)p);
  return 0;
}
EXPORT int cuMemAllocHost_v2(void **p, size_t bytes) {
  *p = malloc(bytes ? bytes : 1);
  return *p ? 0 : 2;
}
EXPORT int cuMemFreeHost(void *p) {
  free(p);
  return 0;
}
EXPORT int cuMemHostRegister_v2(void *p, size_t bytes, unsigned flags) {
  (void)p, (void)bytes, (void)flags;
  return 0;
}
EXPORT int cuMemHostUnregister(void *p) {
  (void)p;
  return 0;
}
EXPORT int cuMemcpyHtoD_v2(fake_ptr dst, const void *src, size_t n) {
  memcpy((void *)(size_t)dst, src, n);
  return 0;
}
EXPORT int cuMemcpyDtoH_v2(void *dst, fake_ptr src, size_t n) {
  memcpy(dst, (const void *)(size_t)src, n);
  return 0;
}
EXPORT int cuMemcpyDtoD_v2(fake_ptr dst, fake_ptr src, size_t n) {
  memmove((void *)(size_t)dst, (const void *)(size_t)src, n);
  return 0;
}
EXPORT int cuMemcpyAsync(fake_ptr dst, fake_ptr src, size_t n, void *s) {
  (void)s;
  return cuMemcpyDtoD_v2(dst, src, n);
}
EXPORT int cuMemcpyHtoDAsync_v2(fake_ptr dst, const void *src, size_t n,
                                void *s) {
  (void)s;
  return cuMemcpyHtoD_v2(dst, src, n);
}
EXPORT int cuMemcpyDtoHAsync_v2(void *dst, fake_ptr src, size_t n, void *s) {
  (void)s;
  return cuMemcpyDtoH_v2(dst, src, n);
}
EXPORT int cuMemcpyDtoDAsync_v2(fake_ptr dst, fake_ptr src, size_t n,
                                void *s) {
  (void)s;
  return cuMemcpyDtoD_v2(dst, src, n);
}
EXPORT int cuMemsetD8Async(fake_ptr dst, unsigned char v, size_t n, void *s) {
  (void)s;
  memset((void *)(size_t)dst, v, n);
  return 0;
}
EXPORT int cuMemsetD16Async(fake_ptr dst, unsigned short v, size_t n,
                            void *s) {
  (void)s;
  unsigned short *p = (unsigned short *)(size_t)dst;
  for (size_t i = 0; i < n; ++i)
    p[i] = v;
  return 0;
}
EXPORT int cuMemsetD32Async(fake_ptr dst, unsigned v, size_t n, void *s) {
  (void)s;
  unsigned *p = (unsigned *)(size_t)dst;
  for (size_t i = 0; i < n; ++i)
    p[i] = v;
  return 0;
}
static int fake_handle_token;
/* Streams are distinct handles; tests read how many were made and
 * destroyed through fake_stream_counts(). */
static char fake_streams[256];
static int fake_streams_made, fake_streams_destroyed;
EXPORT void fake_stream_counts(int *made, int *destroyed) {
  *made = fake_streams_made;
  *destroyed = fake_streams_destroyed;
}
EXPORT int cuStreamCreate(void **s, unsigned flags) {
  (void)flags;
  *s = &fake_streams[fake_streams_made++ % 256];
  return 0;
}
EXPORT int cuStreamDestroy_v2(void *s) {
  (void)s;
  ++fake_streams_destroyed;
  return 0;
}
EXPORT int cuStreamSynchronize(void *s) {
  (void)s;
  return 0;
}
EXPORT int cuStreamWaitEvent(void *s, void *e, unsigned flags) {
  (void)s, (void)e, (void)flags;
  return 0;
}
EXPORT int cuEventCreate(void **e, unsigned flags) {
  (void)flags;
  *e = &fake_handle_token;
  return 0;
}
EXPORT int cuEventDestroy_v2(void *e) {
  (void)e;
  return 0;
}
EXPORT int cuEventRecord(void *e, void *s) {
  (void)e, (void)s;
  return 0;
}
EXPORT int cuEventSynchronize(void *e) {
  (void)e;
  return 0;
}
EXPORT int cuEventQuery(void *e) {
  (void)e;
  return 0;
}
EXPORT int cuEventElapsedTime(float *ms, void *a, void *b) {
  (void)a, (void)b;
  *ms = 1.0f;
  return 0;
}
