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
#include <stdint.h>

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

/// Element type codes of lf_rt_tensor_map_encode.
#define LF_RT_DTYPE_F32 0
#define LF_RT_DTYPE_F16 1
#define LF_RT_DTYPE_BF16 2
#define LF_RT_DTYPE_F64 3
#define LF_RT_DTYPE_I8 4
#define LF_RT_DTYPE_I16 5
#define LF_RT_DTYPE_I32 6
#define LF_RT_DTYPE_I64 7
/// f32 in memory, rounded to TF32 by the TMA unit as it loads (a map of
/// docs/kernel-contract.md's llm_fuse.tensor_maps_tf32)
#define LF_RT_DTYPE_TF32 8

/// Size of an encoded tensor map (a CUtensorMap), in bytes.
#define LF_RT_TENSOR_MAP_BYTES 128

/// Encodes a CUDA tensor map (TMA descriptor, cuTensorMapEncodeTiled) for a
/// kernel parameter declared as a tensor map (docs/kernel-contract.md,
/// "Tensor maps"; docs/aot.md says how a swapped launch calls this). Writes
/// LF_RT_TENSOR_MAP_BYTES bytes to `out_map` (any alignment), which the
/// caller passes by value as the kernel argument (args[i] = out_map).
///
/// `base` is the viewed buffer's device address (16-byte aligned), dense
/// and row-major; `dims` and `box` hold `rank` (1 to 5) sizes in elements,
/// row-major as in the IR (outermost first; the function reverses them for
/// the driver); `dtype` is an LF_RT_DTYPE_* code; `swizzle_bytes` is 0
/// (none), 32, 64 or 128; `l2promo_bytes` 0 (none), 64, 128 or 256;
/// `oob_nan` non-zero fills out-of-bounds elements with NaN (floats only),
/// else with zero. Strides are the dense ones, element strides 1, no
/// interleave.
///
/// Returns 0 on success. On failure (a spec TMA does not take, a driver
/// without tensor maps, an earlier error pending) `out_map` is zeroed and
/// the error is kept as every other runtime error: lf_rt_status() is
/// non-zero, lf_rt_last_error() says why, and the launch that follows is
/// skipped, so no kernel ever runs with a garbage map.
int lf_rt_tensor_map_encode(void *out_map, const void *base, int32_t dtype,
                            int32_t rank, const uint64_t *dims,
                            const uint32_t *box, int32_t swizzle_bytes,
                            int32_t l2promo_bytes, int32_t oob_nan);

#ifdef __cplusplus
}
#endif

#endif /* LLM_FUSE_RT_H */
