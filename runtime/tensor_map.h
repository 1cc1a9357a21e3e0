/* tensor_map.h - CUDA tensor maps (TMA descriptors) for kernels that ask
 * for them (docs/kernel-contract.md, "Tensor maps").
 *
 * A kernel declares, after its ordinary parameters, one 128-byte
 * grid-constant CUtensorMap per map; the builder describes each in an
 * lf_tensor_map_spec_t (builder/builder.h: the viewed buffer's dims and the
 * box, row-major as in the IR). Whoever launches the kernel (the
 * verification worker, libllm_fuse_rt for swapped and AOT-compiled
 * programs) encodes each map on the device pointer of the buffer of that
 * launch with the one function here, and passes the 128 bytes as the
 * parameter (args[i] points at them). Plain C, the CUDA driver only.
 */
#ifndef LF_RUNTIME_TENSOR_MAP_H
#define LF_RUNTIME_TENSOR_MAP_H

#include <stdint.h>

#include "base/status.h"
#include "builder/builder.h"
#include "runtime/cuda_driver.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Size of an encoded tensor map: the kernel parameter's size.
#define LF_TENSOR_MAP_BYTES 128

/// libllm_fuse_rt's element type codes of a map (LF_RT_DTYPE_*,
/// runtime/mgpu/llm_fuse_rt.h: "f32" 0 ... "i64" 7, "tf32" 8), one table
/// for the swap (which emits them) and the runtime (which reads them):
/// the code of `dtype` (compared within `cap` bytes, a spec's dtype field
/// need not end in a NUL), -1 if none; the name of a code, NULL if none.
int lf_tensor_map_rt_code(const char *dtype, size_t cap);
const char *lf_tensor_map_rt_name(int code);

/// The arguments of cuTensorMapEncodeTiled for a spec (without the map and
/// the address): innermost dimension first, as the driver wants them.
typedef struct lf_tensor_map_args_s {
  CUtensorMapDataType dtype;
  cuuint32_t rank;
  cuuint64_t dims[5];    ///< dims[0] is the innermost (last in the IR)
  cuuint64_t strides[4]; ///< bytes; strides[k] is dimension k+1's
  cuuint32_t box[5];
  cuuint32_t element_strides[5]; ///< all 1
  CUtensorMapInterleave interleave; ///< always NONE
  CUtensorMapSwizzle swizzle;
  CUtensorMapL2promotion l2_promotion;
  CUtensorMapFloatOOBfill oob_fill;
  uint32_t element_bytes;
} lf_tensor_map_args_t;

/// Element size in bytes of a tensor-map dtype name ("bf16" 2, "f32" 4,
/// ...); 0 for a name tensor maps do not support.
uint32_t lf_tensor_map_dtype_bytes(const char *dtype);

/// Checks `spec` against what cuTensorMapEncodeTiled accepts (rank 1..5,
/// a known dtype, 0 < dims < 2^32, 0 < box <= 256 and <= the dimension, an
/// inner box of a multiple of 16 bytes and within the swizzle span, byte
/// strides multiples of 16 and under 2^40, a known swizzle and L2
/// promotion, NaN fill only for floats) and fills `*out` (reversed to
/// innermost first). INVALID_ARGUMENT naming the rule on failure.
lf_status_t lf_tensor_map_args(const lf_tensor_map_spec_t *spec,
                               lf_tensor_map_args_t *out);

/// Encodes `spec` on the buffer at device address `base` (16-byte aligned)
/// into `out_map` (LF_TENSOR_MAP_BYTES bytes, any alignment). On failure
/// `out_map` is zeroed and the status says why (a bad spec:
/// INVALID_ARGUMENT; the driver's refusal: its error name and text). Thread
/// safe; needs no current context.
lf_status_t lf_tensor_map_encode(const lf_cuda_driver_t *driver,
                                 const lf_tensor_map_spec_t *spec,
                                 CUdeviceptr base, void *out_map);

/// One line describing a spec for messages: "bf16 256x256 box 64x64
/// swizzle none l2promo none oob zero".
void lf_tensor_map_describe(const lf_tensor_map_spec_t *spec, char *out,
                            size_t size);

#ifdef __cplusplus
}
#endif

#endif /* LF_RUNTIME_TENSOR_MAP_H */
