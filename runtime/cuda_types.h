/* cuda_types.h - the CUDA driver API types runtime/ uses.
 *
 * With the CUDA toolkit present these come from its cuda.h. Without it, the
 * few ABI-stable declarations below stand in, so the runtime still builds
 * (and reports "no driver" at run time) on a machine with no toolkit.
 */
#ifndef LF_RUNTIME_CUDA_TYPES_H
#define LF_RUNTIME_CUDA_TYPES_H

#if defined(LF_HAVE_CUDA_H)
#include <cuda.h>
#else
typedef int CUresult;
typedef int CUdevice;
typedef int CUdevice_attribute;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_NO_DEVICE 100
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#endif

#endif /* LF_RUNTIME_CUDA_TYPES_H */
