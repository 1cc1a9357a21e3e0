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
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;
typedef int CUfunction_attribute;
typedef int CUjit_option;
#define CUDA_ERROR_NOT_READY 600
#define CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE 38
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CU_STREAM_NON_BLOCKING 1
#define CU_EVENT_DEFAULT 0
#endif

#endif /* LF_RUNTIME_CUDA_TYPES_H */
