/* llm_fuse_rt.h - the runtime library of ahead-of-time compiled models.
 *
 * A model compiled by llm-fuse-compile calls the MLIR GPU runtime ABI
 * (mgpuModuleLoad, mgpuLaunchKernel, mgpuMemAlloc, ...: the functions the
 * upstream gpu-to-llvm lowering emits). libllm_fuse_rt implements that ABI
 * on the CUDA driver, which it loads with dlopen on first use, so a compiled
 * model links against this library alone (plus libc and libdl) and still
 * starts on a machine without a GPU: its calls then fail with an error.
 *
 * The mgpu* functions return nothing, so errors are sticky: the first one is
 * kept with its message, every later GPU operation is skipped (nothing runs
 * on half-initialized state), and the caller asks lf_rt_status() after a
 * call. The generated model header does this for you (`<entry>_run` returns
 * lf_rt_status()).
 *
 * Everything here uses the primary context of one device (ordinal 0, or
 * LLM_FUSE_DEVICE, or mgpuSetDefaultDevice before first use). Device memory
 * from lf_rt_malloc is ordinary cuMemAlloc memory, interchangeable with
 * cudaMalloc's in the same process.
 */
#ifndef LLM_FUSE_RT_H
#define LLM_FUSE_RT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// 0 when no GPU operation has failed since start (or since
/// lf_rt_clear_error), else non-zero.
int lf_rt_status(void);

/// The first error's message ("mgpuModuleLoad: cuModuleLoadData: ..."), or
/// NULL when there is none. Borrowed; valid until lf_rt_clear_error.
const char *lf_rt_last_error(void);

/// Forgets the sticky error so that GPU operations run again. Modules that
/// failed to load at start stay unloaded.
void lf_rt_clear_error(void);

/// Loads the driver and makes the device's primary context, if not done
/// yet. Returns lf_rt_status(). Optional: every entry point does it.
int lf_rt_init(void);

/// Device memory helpers, so that a program driving a compiled model needs
/// no other GPU library. Each returns 0 on success, else non-zero with the
/// error kept as above. `*out_ptr` is a device pointer (NULL on failure).
int lf_rt_malloc(void **out_ptr, size_t bytes);
/// Frees lf_rt_malloc memory. Accepts NULL.
int lf_rt_free(void *ptr);
/// Host to device, synchronous.
int lf_rt_copy_to_device(void *device_dst, const void *host_src, size_t bytes);
/// Device to host, synchronous (waits for the device's pending work).
int lf_rt_copy_to_host(void *host_dst, const void *device_src, size_t bytes);
/// Waits for all work on the device.
int lf_rt_synchronize(void);

#ifdef __cplusplus
}
#endif

#endif /* LLM_FUSE_RT_H */
