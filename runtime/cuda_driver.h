/* cuda_driver.h - the CUDA driver, loaded with dlopen.
 *
 * llm-fuse never links against libcuda: the build machine may have no
 * driver. lf_cuda_driver_load() opens libcuda.so.1 at run time, resolves
 * every entry point of cuda_symbols.inc and initializes the driver; any
 * failure is a status that says what is missing and what still works.
 * Every CUresult becomes a status through one function, with the driver's
 * own error name and text.
 */
#ifndef LF_RUNTIME_CUDA_DRIVER_H
#define LF_RUNTIME_CUDA_DRIVER_H

#include <stddef.h>

#include "base/status.h"
#include "runtime/cuda_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The driver's entry points. Borrow only from a loaded driver.
typedef struct lf_cuda_driver_s {
  void *library; /* dlopen handle */
  int version;   /* cuDriverGetVersion, e.g. 13000 */
#define LF_CU_SYM(field, symbol, params) CUresult(*field) params;
#include "runtime/cuda_symbols.inc"
#undef LF_CU_SYM
} lf_cuda_driver_t;

/// Loads and initializes the driver. The library is LLM_FUSE_LIBCUDA when
/// set (tests point it at a fake), else libcuda.so.1 from the loader path.
/// UNAVAILABLE when there is no driver or no GPU; the message explains.
/// On success `*out_driver` is owned by the caller
/// (lf_cuda_driver_unload).
lf_status_t lf_cuda_driver_load(lf_cuda_driver_t **out_driver);

/// Closes the library. Accepts NULL.
void lf_cuda_driver_unload(lf_cuda_driver_t *driver);

/// Turns `result` into a status ("cuInit: CUDA_ERROR_NO_DEVICE: no
/// CUDA-capable device is detected"); OK for CUDA_SUCCESS. `driver` may be
/// NULL or half-loaded, in which case only the number is reported.
lf_status_t lf_cuda_result_to_status(const lf_cuda_driver_t *driver,
                                     CUresult result, const char *expr,
                                     const char *file, int line);

/// Calls a driver function and returns its error as a status:
///   LF_CU_RETURN_IF_ERROR(drv, cuDeviceGet(&dev, 0));
#define LF_CU_RETURN_IF_ERROR(driver, call)                                    \
  LF_RETURN_IF_ERROR(lf_cuda_result_to_status(                                 \
      (driver), (driver)->call, #call, __FILE__, __LINE__))

/// One device, as the probe reports it.
typedef struct lf_cuda_device_info_s {
  int ordinal;
  char name[256];
  int cc_major, cc_minor;
  int multiprocessors;
  size_t memory_bytes;
} lf_cuda_device_info_t;

/// Number of devices the driver sees.
lf_status_t lf_cuda_device_count(const lf_cuda_driver_t *driver,
                                 int *out_count);

/// Describes device `ordinal`.
lf_status_t lf_cuda_device_info(const lf_cuda_driver_t *driver, int ordinal,
                                lf_cuda_device_info_t *out_info);

#ifdef __cplusplus
}
#endif

#endif /* LF_RUNTIME_CUDA_DRIVER_H */
