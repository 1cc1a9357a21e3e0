/* mgpu.c - the MLIR GPU runtime ABI (the mgpu* functions that upstream
 * gpu-to-llvm and the gpu.binary translation emit calls to) on the CUDA
 * driver, loaded with dlopen through runtime/cuda_driver.h. See
 * llm_fuse_rt.h for the error model: the first failure is kept, later GPU
 * work is skipped, and lf_rt_status() reports it.
 *
 * The signatures are those MLIR 22 declares in the LLVM IR it emits (index
 * is intptr_t, sizes are 64-bit, a bool is one byte); our own code, written
 * from those declarations.
 */
#include "runtime/mgpu/llm_fuse_rt.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda_driver.h"
#include "runtime/tensor_map.h"

#define EXPORT __attribute__((visibility("default")))

#if defined(LF_HAVE_CUDA_H)
#define JIT_OPTIMIZATION_LEVEL CU_JIT_OPTIMIZATION_LEVEL
#define EVENT_DISABLE_TIMING CU_EVENT_DISABLE_TIMING
#else
#define JIT_OPTIMIZATION_LEVEL ((CUjit_option)7)
#define EVENT_DISABLE_TIMING 2
#endif

/* ---- State: one driver, one device, its primary context. ---- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t error_lock = PTHREAD_MUTEX_INITIALIZER;
static lf_cuda_driver_t *drv;
static CUcontext context;
static int device_ordinal = -1; /* -1: LLM_FUSE_DEVICE or 0 */
static volatile int has_error;
static char error_message[1024];

/* Keeps the first error; takes ownership of `s`. Returns true if there was
 * one. */
static bool keep(const char *fn, lf_status_t s) {
  if (!s)
    return false;
  pthread_mutex_lock(&error_lock);
  if (!has_error) {
    snprintf(error_message, sizeof(error_message), "%s: %s", fn,
             lf_status_message(s));
    has_error = 1;
    if (!getenv("LLM_FUSE_RT_QUIET"))
      fprintf(stderr, "llm-fuse runtime: %s\n", error_message);
  }
  pthread_mutex_unlock(&error_lock);
  lf_status_free(s);
  return true;
}

#define CHECK(fn, call)                                                        \
  keep(fn, lf_cuda_result_to_status(drv, drv->call, #call, __FILE__, __LINE__))

static void init_once_fn(void) {
  lf_status_t s = lf_cuda_driver_load(&drv);
  if (keep("loading the CUDA driver", s)) {
    drv = NULL;
    return;
  }
  int ordinal = device_ordinal;
  if (ordinal < 0) {
    const char *env = getenv("LLM_FUSE_DEVICE");
    ordinal = env && *env ? atoi(env) : 0;
  }
  CUdevice device;
  if (CHECK("selecting the device", cuDeviceGet(&device, ordinal)) ||
      CHECK("selecting the device", cuDevicePrimaryCtxRetain(&context, device)))
    context = NULL;
}

/* Makes the context current for one call; false (and nothing to undo) when
 * the runtime is unusable or an earlier error is pending. */
static bool enter(const char *fn) {
  pthread_once(&init_once, init_once_fn);
  if (has_error || !drv || !context)
    return false;
  return !CHECK(fn, cuCtxPushCurrent(context));
}

static void leave(void) {
  CUcontext popped;
  drv->cuCtxPopCurrent(&popped);
}

/* Like enter(), for releasing resources: runs even with an error pending,
 * as long as there is a context. */
static bool enter_for_cleanup(void) {
  pthread_once(&init_once, init_once_fn);
  return drv && context && drv->cuCtxPushCurrent(context) == CUDA_SUCCESS;
}

/* ---- Modules and launches. ---- */

EXPORT void *mgpuModuleLoad(void *data, size_t size) {
  (void)size; /* cubin and fatbin images carry their own size */
  CUmodule module = NULL;
  if (!enter("mgpuModuleLoad"))
    return NULL;
  if (CHECK("mgpuModuleLoad", cuModuleLoadData(&module, data)))
    module = NULL;
  leave();
  return module;
}

EXPORT void *mgpuModuleLoadJIT(void *data, int opt_level) {
  CUmodule module = NULL;
  if (!enter("mgpuModuleLoadJIT"))
    return NULL;
  CUjit_option options[] = {JIT_OPTIMIZATION_LEVEL};
  void *values[] = {(void *)(intptr_t)opt_level};
  if (CHECK("mgpuModuleLoadJIT",
            cuModuleLoadDataEx(&module, data, 1, options, values)))
    module = NULL;
  leave();
  return module;
}

EXPORT void mgpuModuleUnload(void *module) {
  if (!module || !enter_for_cleanup())
    return;
  drv->cuModuleUnload((CUmodule)module);
  leave();
}

EXPORT void *mgpuModuleGetFunction(void *module, const char *name) {
  CUfunction function = NULL;
  if (!enter("mgpuModuleGetFunction"))
    return NULL;
  if (!module)
    keep("mgpuModuleGetFunction",
         LF_STATUS(LF_STATUS_FAILED_PRECONDITION,
                   "the GPU module holding '%s' is not loaded",
                   name ? name : "?"));
  else if (CHECK("mgpuModuleGetFunction",
                 cuModuleGetFunction(&function, (CUmodule)module, name)))
    function = NULL;
  leave();
  return function;
}

static bool dim_ok(intptr_t v) { return v >= 1 && v <= (intptr_t)UINT32_MAX; }

EXPORT void mgpuLaunchKernel(void *function, intptr_t grid_x, intptr_t grid_y,
                             intptr_t grid_z, intptr_t block_x,
                             intptr_t block_y, intptr_t block_z,
                             int32_t shared_bytes, void *stream, void **params,
                             void **extra, size_t num_params) {
  (void)num_params;
  if (!enter("mgpuLaunchKernel"))
    return;
  if (!function)
    keep("mgpuLaunchKernel",
         LF_STATUS(LF_STATUS_FAILED_PRECONDITION, "no kernel to launch"));
  else if (!dim_ok(grid_x) || !dim_ok(grid_y) || !dim_ok(grid_z) ||
           !dim_ok(block_x) || !dim_ok(block_y) || !dim_ok(block_z) ||
           shared_bytes < 0)
    keep("mgpuLaunchKernel",
         LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                   "launch size out of range: grid %jd x %jd x %jd, block "
                   "%jd x %jd x %jd, %d shared bytes",
                   (intmax_t)grid_x, (intmax_t)grid_y, (intmax_t)grid_z,
                   (intmax_t)block_x, (intmax_t)block_y, (intmax_t)block_z,
                   (int)shared_bytes));
  /* More than the default 48 KiB of dynamic shared memory (the GEMM
   * kernels' pipelines) needs the kernel's explicit opt-in first. */
  else if (shared_bytes > 48 * 1024 &&
           CHECK("mgpuLaunchKernel",
                 cuFuncSetAttribute(
                     (CUfunction)function,
                     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                     shared_bytes)))
    ;
  else
    CHECK("mgpuLaunchKernel",
          cuLaunchKernel((CUfunction)function, (unsigned)grid_x,
                         (unsigned)grid_y, (unsigned)grid_z, (unsigned)block_x,
                         (unsigned)block_y, (unsigned)block_z,
                         (unsigned)shared_bytes, (CUstream)stream, params,
                         extra));
  leave();
}

/* ---- Streams and events. ---- */

/* Streams: a compiled model creates one stream per call and destroys it
 * when the call returns. cuStreamCreate/cuStreamDestroy cost more than the
 * launches of a small model, so destroyed streams are kept (at most
 * STREAM_SLOTS) and handed out again. Reusing a stream only orders new work
 * after whatever was queued on it, which the destroyer no longer waits for.
 * LLM_FUSE_RT_CACHE=0 turns this off with the buffer cache. */
#define STREAM_SLOTS 16

static pthread_mutex_t stream_lock = PTHREAD_MUTEX_INITIALIZER;
static CUstream stream_pool[STREAM_SLOTS];
static size_t stream_count;

static bool cache_enabled(void);

EXPORT void *mgpuStreamCreate(void) {
  CUstream stream = NULL;
  if (!enter("mgpuStreamCreate"))
    return NULL;
  pthread_mutex_lock(&stream_lock);
  if (stream_count)
    stream = stream_pool[--stream_count];
  pthread_mutex_unlock(&stream_lock);
  if (!stream && CHECK("mgpuStreamCreate",
                       cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING)))
    stream = NULL;
  leave();
  return stream;
}

EXPORT void mgpuStreamDestroy(void *stream) {
  if (!stream || !enter_for_cleanup())
    return;
  bool kept = false;
  if (cache_enabled()) {
    pthread_mutex_lock(&stream_lock);
    if (stream_count < STREAM_SLOTS) {
      stream_pool[stream_count++] = (CUstream)stream;
      kept = true;
    }
    pthread_mutex_unlock(&stream_lock);
  }
  if (!kept)
    drv->cuStreamDestroy((CUstream)stream);
  leave();
}

EXPORT void mgpuStreamSynchronize(void *stream) {
  if (!enter("mgpuStreamSynchronize"))
    return;
  CHECK("mgpuStreamSynchronize", cuStreamSynchronize((CUstream)stream));
  leave();
}

EXPORT void mgpuStreamWaitEvent(void *stream, void *event) {
  if (!enter("mgpuStreamWaitEvent"))
    return;
  CHECK("mgpuStreamWaitEvent",
        cuStreamWaitEvent((CUstream)stream, (CUevent)event, 0));
  leave();
}

EXPORT void *mgpuEventCreate(void) {
  CUevent event = NULL;
  if (!enter("mgpuEventCreate"))
    return NULL;
  if (CHECK("mgpuEventCreate", cuEventCreate(&event, EVENT_DISABLE_TIMING)))
    event = NULL;
  leave();
  return event;
}

EXPORT void mgpuEventDestroy(void *event) {
  if (!event || !enter_for_cleanup())
    return;
  drv->cuEventDestroy((CUevent)event);
  leave();
}

EXPORT void mgpuEventSynchronize(void *event) {
  if (!enter("mgpuEventSynchronize"))
    return;
  CHECK("mgpuEventSynchronize", cuEventSynchronize((CUevent)event));
  leave();
}

EXPORT void mgpuEventRecord(void *event, void *stream) {
  if (!enter("mgpuEventRecord"))
    return;
  CHECK("mgpuEventRecord", cuEventRecord((CUevent)event, (CUstream)stream));
  leave();
}

/* ---- Memory. ---- */

/* ---- Memory: a small stream-ordered cache of device buffers. ----
 *
 * A compiled model allocates its temporaries at every call and frees them
 * before it returns. cuMemAlloc and cuMemFree are slow and cuMemFree waits
 * for the device, so freed buffers are kept instead: each with an event
 * recorded on the stream that freed it, and handed out again, for a request
 * of exactly the same size, once that event has completed (all work that
 * could use the buffer is done). At most CACHE_SLOTS buffers and
 * CACHE_BYTES bytes are kept; beyond that, or with LLM_FUSE_RT_CACHE=0,
 * buffers are freed as before. lf_rt_free() always frees for real. */
#define CACHE_SLOTS 256
#define CACHE_BYTES ((uint64_t)8 << 30)

typedef struct cached_s {
  CUdeviceptr ptr;
  uint64_t bytes;
  CUevent ready; /* recorded when freed; NULL: ready now */
} cached_t;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cached_t cache[CACHE_SLOTS];
static size_t cache_count;
static uint64_t cache_total;

static bool cache_enabled(void) {
  static int enabled = -1;
  if (enabled < 0) {
    const char *env = getenv("LLM_FUSE_RT_CACHE");
    enabled = !(env && strcmp(env, "0") == 0);
  }
  return enabled;
}

/* Takes a ready buffer of `bytes` from the cache; 0 when there is none.
 * The context is current. */
static CUdeviceptr cache_take(uint64_t bytes) {
  CUdeviceptr ptr = 0;
  pthread_mutex_lock(&cache_lock);
  for (size_t i = 0; i < cache_count; ++i) {
    if (cache[i].bytes != bytes)
      continue;
    if (cache[i].ready && drv->cuEventQuery(cache[i].ready) != CUDA_SUCCESS)
      continue;
    ptr = cache[i].ptr;
    if (cache[i].ready)
      drv->cuEventDestroy(cache[i].ready);
    cache_total -= bytes;
    cache[i] = cache[--cache_count];
    break;
  }
  pthread_mutex_unlock(&cache_lock);
  return ptr;
}

/* Keeps a freed buffer; false when it does not fit (the caller frees it).
 * The context is current. */
static bool cache_put(CUdeviceptr ptr, uint64_t bytes, CUstream stream) {
  if (!cache_enabled() || !bytes)
    return false;
  CUevent ready = NULL;
  if (stream &&
      (drv->cuEventCreate(&ready, EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
       drv->cuEventRecord(ready, stream) != CUDA_SUCCESS)) {
    if (ready)
      drv->cuEventDestroy(ready);
    return false;
  }
  bool kept = false;
  pthread_mutex_lock(&cache_lock);
  if (cache_count < CACHE_SLOTS && cache_total + bytes <= CACHE_BYTES) {
    cache[cache_count++] = (cached_t){ptr, bytes, ready};
    cache_total += bytes;
    kept = true;
  }
  pthread_mutex_unlock(&cache_lock);
  if (!kept && ready)
    drv->cuEventDestroy(ready);
  return kept;
}

/* The size of every live buffer handed out, to cache it by size when it is
 * freed. A small open-addressed table keyed by address. */
#define LIVE_SLOTS 4096
static struct {
  CUdeviceptr ptr;
  uint64_t bytes;
} live[LIVE_SLOTS];

static size_t live_slot(CUdeviceptr ptr) {
  return (size_t)((ptr >> 8) * 0x9E3779B97F4A7C15ull >> 52) % LIVE_SLOTS;
}

static void live_add(CUdeviceptr ptr, uint64_t bytes) {
  pthread_mutex_lock(&cache_lock);
  for (size_t n = 0, i = live_slot(ptr); n < LIVE_SLOTS;
       ++n, i = (i + 1) % LIVE_SLOTS)
    if (!live[i].ptr) {
      live[i].ptr = ptr;
      live[i].bytes = bytes;
      break;
    }
  pthread_mutex_unlock(&cache_lock);
}

/* Removes `ptr`; its size, or 0 when it was not recorded. */
static uint64_t live_remove(CUdeviceptr ptr) {
  uint64_t bytes = 0;
  pthread_mutex_lock(&cache_lock);
  for (size_t n = 0, i = live_slot(ptr); n < LIVE_SLOTS && live[i].ptr;
       ++n, i = (i + 1) % LIVE_SLOTS)
    if (live[i].ptr == ptr) {
      bytes = live[i].bytes;
      /* Backward-shift deletion keeps the probe chains whole. */
      size_t j = i;
      for (;;) {
        live[j].ptr = 0;
        size_t k = j;
        for (;;) {
          k = (k + 1) % LIVE_SLOTS;
          if (!live[k].ptr)
            goto done;
          size_t home = live_slot(live[k].ptr);
          bool between = j <= k ? (j < home && home <= k)
                                : (j < home || home <= k);
          if (!between)
            break;
        }
        live[j] = live[k];
        j = k;
      }
    }
done:
  pthread_mutex_unlock(&cache_lock);
  return bytes;
}

EXPORT void *mgpuMemAlloc(uint64_t bytes, void *stream, bool host_shared) {
  (void)stream;
  CUdeviceptr ptr = 0;
  if (!enter("mgpuMemAlloc"))
    return NULL;
  if (bytes == 0)
    bytes = 1;
  if (host_shared)
    keep("mgpuMemAlloc",
         LF_STATUS(LF_STATUS_UNIMPLEMENTED,
                   "gpu.alloc host_shared (managed memory) is not supported: "
                   "compiled models keep their data in device memory"));
  else if (!(ptr = cache_take(bytes)) &&
           CHECK("mgpuMemAlloc", cuMemAlloc(&ptr, bytes)))
    ptr = 0;
  if (ptr)
    live_add(ptr, bytes);
  leave();
  return (void *)(uintptr_t)ptr;
}

/* Frees for real. The context is current. */
static void mem_free(CUdeviceptr ptr, CUstream stream) {
  /* Stream-ordered: work queued on `stream` may still use the buffer. */
  if (stream)
    drv->cuStreamSynchronize(stream);
  CUresult r = drv->cuMemFree(ptr);
  if (r != CUDA_SUCCESS && !has_error)
    keep("mgpuMemFree",
         lf_cuda_result_to_status(drv, r, "cuMemFree", __FILE__, __LINE__));
}

EXPORT void mgpuMemFree(void *ptr, void *stream) {
  if (!ptr || !enter_for_cleanup())
    return;
  CUdeviceptr p = (CUdeviceptr)(uintptr_t)ptr;
  uint64_t bytes = live_remove(p);
  if (!bytes || has_error || !cache_put(p, bytes, (CUstream)stream))
    mem_free(p, (CUstream)stream);
  leave();
}

EXPORT void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  if (!enter("mgpuMemcpy"))
    return;
  /* Unified addressing: the driver tells host from device pointers. */
  CHECK("mgpuMemcpy",
        cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src,
                      bytes, (CUstream)stream));
  leave();
}

EXPORT void mgpuMemset32(void *dst, unsigned int value, size_t count,
                         void *stream) {
  if (!enter("mgpuMemset32"))
    return;
  CHECK("mgpuMemset32", cuMemsetD32Async((CUdeviceptr)(uintptr_t)dst, value,
                                         count, (CUstream)stream));
  leave();
}

EXPORT void mgpuMemset16(void *dst, unsigned short value, size_t count,
                         void *stream) {
  if (!enter("mgpuMemset16"))
    return;
  CHECK("mgpuMemset16", cuMemsetD16Async((CUdeviceptr)(uintptr_t)dst, value,
                                         count, (CUstream)stream));
  leave();
}

EXPORT void mgpuMemHostRegister(void *ptr, uint64_t bytes) {
  if (!enter("mgpuMemHostRegister"))
    return;
  CHECK("mgpuMemHostRegister", cuMemHostRegister(ptr, bytes, 0));
  leave();
}

EXPORT void mgpuMemHostUnregister(void *ptr) {
  if (!ptr || !enter_for_cleanup())
    return;
  drv->cuMemHostUnregister(ptr);
  leave();
}

/* A ranked memref descriptor: allocated, aligned, offset, sizes[rank],
 * strides[rank]. */
typedef struct memref_desc_s {
  char *allocated, *aligned;
  int64_t offset;
  int64_t sizes_and_strides[];
} memref_desc_t;

/* Bytes of a dense memref, or -1 when its strides are not dense. */
static int64_t dense_bytes(int64_t rank, const memref_desc_t *d,
                           int64_t elem_bytes) {
  int64_t expect = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    if (d->sizes_and_strides[rank + i] != expect)
      return -1;
    expect *= d->sizes_and_strides[i];
  }
  return expect * elem_bytes;
}

EXPORT void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                                      int64_t elem_bytes) {
  const memref_desc_t *d = descriptor;
  int64_t bytes = dense_bytes(rank, d, elem_bytes);
  if (bytes < 0) {
    keep("mgpuMemHostRegisterMemRef",
         LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                   "only dense memrefs can be registered"));
    return;
  }
  mgpuMemHostRegister(d->aligned + d->offset * elem_bytes, (uint64_t)bytes);
}

EXPORT void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                        int64_t elem_bytes) {
  (void)rank;
  const memref_desc_t *d = descriptor;
  mgpuMemHostUnregister(d->aligned + d->offset * elem_bytes);
}

EXPORT void mgpuSetDefaultDevice(int32_t device) {
  /* Takes effect only before the first GPU call: one context per process. */
  if (context == NULL)
    device_ordinal = device;
}

/* ---- llm_fuse_rt.h ---- */

EXPORT int lf_rt_status(void) { return has_error ? 1 : 0; }

EXPORT const char *lf_rt_last_error(void) {
  return has_error ? error_message : NULL;
}

EXPORT void lf_rt_clear_error(void) {
  pthread_mutex_lock(&error_lock);
  has_error = 0;
  error_message[0] = 0;
  pthread_mutex_unlock(&error_lock);
}

EXPORT int lf_rt_init(void) {
  if (enter("lf_rt_init"))
    leave();
  return lf_rt_status();
}

EXPORT int lf_rt_malloc(void **out_ptr, size_t bytes) {
  *out_ptr = mgpuMemAlloc(bytes, NULL, false);
  return lf_rt_status();
}

EXPORT int lf_rt_free(void *ptr) {
  if (ptr && enter_for_cleanup()) {
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)ptr;
    live_remove(p);
    mem_free(p, NULL);
    leave();
  }
  return lf_rt_status();
}

EXPORT int lf_rt_copy_to_device(void *device_dst, const void *host_src,
                                size_t bytes) {
  if (enter("lf_rt_copy_to_device")) {
    CHECK("lf_rt_copy_to_device",
          cuMemcpyHtoD((CUdeviceptr)(uintptr_t)device_dst, host_src, bytes));
    leave();
  }
  return lf_rt_status();
}

EXPORT int lf_rt_copy_to_host(void *host_dst, const void *device_src,
                              size_t bytes) {
  if (enter("lf_rt_copy_to_host")) {
    if (!CHECK("lf_rt_copy_to_host", cuCtxSynchronize()))
      CHECK("lf_rt_copy_to_host",
            cuMemcpyDtoH(host_dst, (CUdeviceptr)(uintptr_t)device_src, bytes));
    leave();
  }
  return lf_rt_status();
}

EXPORT int lf_rt_synchronize(void) {
  if (enter("lf_rt_synchronize")) {
    CHECK("lf_rt_synchronize", cuCtxSynchronize());
    leave();
  }
  return lf_rt_status();
}

/* ---- Tensor maps (TMA). ---- */

EXPORT int lf_rt_tensor_map_encode(void *out_map, const void *base,
                                   int32_t dtype, int32_t rank,
                                   const uint64_t *dims, const uint32_t *box,
                                   int32_t swizzle_bytes,
                                   int32_t l2promo_bytes, int32_t oob_nan) {
  if (!out_map) {
    keep("lf_rt_tensor_map_encode",
         LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "no map to write"));
    return lf_rt_status();
  }
  memset(out_map, 0, LF_TENSOR_MAP_BYTES);
  if (!enter("lf_rt_tensor_map_encode"))
    return 1; /* the pending (or start-up) error stays the one kept */
  lf_tensor_map_spec_t spec;
  memset(&spec, 0, sizeof(spec));
  lf_status_t s = LF_OK;
  const char *dtype_name = lf_tensor_map_rt_name(dtype);
  if (!dtype_name)
    s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                  "element type code %d (LF_RT_DTYPE_F32 .. _TF32)", (int)dtype);
  else if (rank < 1 || rank > 5 || !dims || !box)
    s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                  "rank %d (1 to 5, with dims and box)", (int)rank);
  if (!s) {
    snprintf(spec.dtype, sizeof(spec.dtype), "%s", dtype_name);
    spec.param = -1;
    spec.rank = rank;
    for (int d = 0; d < rank; ++d) {
      spec.dims[d] = dims[d];
      spec.box[d] = box[d];
    }
    spec.swizzle_bytes = swizzle_bytes;
    spec.l2promo_bytes = l2promo_bytes;
    spec.oob_nan = oob_nan != 0;
    s = lf_tensor_map_encode(drv, &spec, (CUdeviceptr)(uintptr_t)base,
                             out_map);
  }
  keep("lf_rt_tensor_map_encode", s);
  leave();
  return lf_rt_status();
}
