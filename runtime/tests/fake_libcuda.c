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
static int fake_module_token;
EXPORT int cuModuleLoadData(void **mod, const void *image) {
  (void)image;
  *mod = module_error() ? NULL : &fake_module_token;
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
/* Functions are distinct handles that remember their name, so that
 * launches can be told apart (fake_launch_record). */
typedef struct fake_function_s {
  char name[160];
} fake_function_t;
static fake_function_t fake_functions[64];
static int fake_num_functions;
EXPORT int cuModuleGetFunction(void **f, void *mod, const char *name) {
  (void)mod;
  *f = NULL;
  if (module_error())
    return 500; /* CUDA_ERROR_NOT_FOUND */
  for (int i = 0; i < fake_num_functions; ++i)
    if (!strcmp(fake_functions[i].name, name)) {
      *f = &fake_functions[i];
      return 0;
    }
  if (fake_num_functions == 64)
    return 2;
  fake_function_t *fn = &fake_functions[fake_num_functions++];
  snprintf(fn->name, sizeof(fn->name), "%s", name);
  *f = fn;
  return 0;
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
/* Launch records: FAKE_CUDA_RECORD="NAME:S0,S1,..." copies, at each
 * launch of kernel NAME, S0 bytes from params[0], S1 from params[1], ...
 * (at most 64 launches of 16 params); tests read them through
 * fake_launch_record(). FAKE_CUDA_STATS=1 makes the verifier's lf_stats
 * helper report a non-degenerate output (values in [-1, 1]), so that the
 * worker's protocol goes on to launch the candidate. */
#define FAKE_RECORDS 64
static unsigned char fake_records[FAKE_RECORDS][16 * 128];
static size_t fake_record_sizes[FAKE_RECORDS];
static int fake_num_records;
EXPORT int fake_launch_record(int i, unsigned char *out, size_t cap) {
  if (i < 0 || i >= fake_num_records)
    return -1;
  size_t n = fake_record_sizes[i] < cap ? fake_record_sizes[i] : cap;
  memcpy(out, fake_records[i], n);
  return (int)fake_record_sizes[i];
}
static void record_launch(const char *name, void **params) {
  const char *spec = getenv("FAKE_CUDA_RECORD");
  size_t len = strlen(name);
  if (!spec || strncmp(spec, name, len) || spec[len] != ':' ||
      fake_num_records == FAKE_RECORDS)
    return;
  unsigned char *rec = fake_records[fake_num_records];
  size_t used = 0;
  const char *p = spec + len + 1;
  for (int i = 0; *p && i < 16; ++i) {
    char *end;
    size_t n = strtoul(p, &end, 10);
    if (n > 128 || end == p)
      break;
    memcpy(rec + used, params[i], n);
    used += n;
    p = *end == ',' ? end + 1 : end;
  }
  fake_record_sizes[fake_num_records++] = used;
}
static unsigned long long ordered(double d) {
  unsigned long long u;
  memcpy(&u, &d, 8);
  return u >> 63 ? ~u : u | (1ull << 63);
}
EXPORT int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, unsigned by, unsigned bz, unsigned smem,
                          void *stream, void **params, void **extra) {
  (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz;
  (void)smem, (void)stream, (void)extra;
  if (!getenv("FAKE_CUDA_LAUNCH_OK"))
    return 1; /* CUDA_ERROR_INVALID_VALUE */
  const char *name = f ? ((fake_function_t *)f)->name : "";
  record_launch(name, params);
  if (getenv("FAKE_CUDA_STATS") && !strcmp(name, "lf_stats")) {
    /* lf_stats(out, n, dtype, stats): the lf_vstats_t of the output */
    unsigned long long n = *(unsigned long long *)params[1];
    unsigned long long *st = (unsigned long long *)(size_t)*(fake_ptr *)params[3];
    double sum = (double)n;
    st[0] = n, st[1] = 0, st[2] = 0;
    memcpy(&st[3], &sum, 8);
    st[4] = ordered(-1.0), st[5] = ordered(1.0);
  }
  return 0;
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

/* Tensor maps: the fake writes a map that says what it was asked for (the
 * address in the first 8 bytes, then "FAKETMAP", rank, dtype, the dims and
 * the box, innermost first) and records the last call's arguments, read by
 * tests through fake_tensor_map_last(). FAKE_CUDA_TMAP_ERROR=N makes it
 * fail with N. */
typedef struct fake_tmap_call_s {
  int calls;
  int dtype;
  unsigned rank;
  unsigned long long address;
  unsigned long long dims[5], strides[4];
  unsigned box[5], element_strides[5];
  int interleave, swizzle, l2, oob;
} fake_tmap_call_t;
static fake_tmap_call_t fake_tmap;
EXPORT void fake_tensor_map_last(fake_tmap_call_t *out) { *out = fake_tmap; }
EXPORT int cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank,
                                  void *address,
                                  const unsigned long long *dims,
                                  const unsigned long long *strides,
                                  const unsigned *box,
                                  const unsigned *element_strides,
                                  int interleave, int swizzle, int l2,
                                  int oob) {
  const char *e = getenv("FAKE_CUDA_TMAP_ERROR");
  if (e && atoi(e))
    return atoi(e);
  if (!map || rank < 1 || rank > 5 || ((size_t)map % 64))
    return 1; /* CUDA_ERROR_INVALID_VALUE */
  fake_tmap_call_t c = {0};
  c.calls = fake_tmap.calls + 1;
  c.dtype = dtype;
  c.rank = rank;
  c.address = (unsigned long long)(size_t)address;
  for (unsigned k = 0; k < rank; ++k) {
    c.dims[k] = dims[k];
    c.box[k] = box[k];
    c.element_strides[k] = element_strides[k];
    if (k + 1 < rank)
      c.strides[k] = strides[k];
  }
  c.interleave = interleave, c.swizzle = swizzle, c.l2 = l2, c.oob = oob;
  fake_tmap = c;
  unsigned long long q[16] = {0};
  q[0] = c.address;
  memcpy(&q[1], "FAKETMAP", 8);
  q[2] = rank | (unsigned long long)dtype << 8 |
         (unsigned long long)swizzle << 16;
  for (unsigned k = 0; k < rank; ++k) {
    q[3 + k] = dims[k];
    q[8 + k] = box[k];
  }
  memcpy(map, q, sizeof(q));
  return 0;
}
