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
/* Tensor maps (TMA, sm_90+): the 128-byte descriptor and the enums of
 * cuTensorMapEncodeTiled, with cuda.h's values. */
typedef unsigned int cuuint32_t;
typedef unsigned long long cuuint64_t;
#define CU_TENSOR_MAP_NUM_QWORDS 16
typedef struct CUtensorMap_st {
  _Alignas(64) cuuint64_t opaque[CU_TENSOR_MAP_NUM_QWORDS];
} CUtensorMap;
typedef int CUtensorMapDataType;
#define CU_TENSOR_MAP_DATA_TYPE_UINT8 0
#define CU_TENSOR_MAP_DATA_TYPE_UINT16 1
#define CU_TENSOR_MAP_DATA_TYPE_UINT32 2
#define CU_TENSOR_MAP_DATA_TYPE_INT32 3
#define CU_TENSOR_MAP_DATA_TYPE_UINT64 4
#define CU_TENSOR_MAP_DATA_TYPE_INT64 5
#define CU_TENSOR_MAP_DATA_TYPE_FLOAT16 6
#define CU_TENSOR_MAP_DATA_TYPE_FLOAT32 7
#define CU_TENSOR_MAP_DATA_TYPE_FLOAT64 8
#define CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 9
#define CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 11
typedef int CUtensorMapInterleave;
#define CU_TENSOR_MAP_INTERLEAVE_NONE 0
typedef int CUtensorMapSwizzle;
#define CU_TENSOR_MAP_SWIZZLE_NONE 0
#define CU_TENSOR_MAP_SWIZZLE_32B 1
#define CU_TENSOR_MAP_SWIZZLE_64B 2
#define CU_TENSOR_MAP_SWIZZLE_128B 3
typedef int CUtensorMapL2promotion;
#define CU_TENSOR_MAP_L2_PROMOTION_NONE 0
#define CU_TENSOR_MAP_L2_PROMOTION_L2_64B 1
#define CU_TENSOR_MAP_L2_PROMOTION_L2_128B 2
#define CU_TENSOR_MAP_L2_PROMOTION_L2_256B 3
typedef int CUtensorMapFloatOOBfill;
#define CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE 0
#define CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA 1
#endif

#endif /* LF_RUNTIME_CUDA_TYPES_H */
