/* cuda_driver.c - dlopen of libcuda, symbol table, CUresult to status. */
#include "runtime/cuda_driver.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

lf_status_t lf_cuda_result_to_status(const lf_cuda_driver_t *driver,
                                     CUresult result, const char *expr,
                                     const char *file, int line) {
  if (result == CUDA_SUCCESS)
    return LF_OK;
  const char *name = NULL, *text = NULL;
  if (driver && driver->cuGetErrorName &&
      driver->cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = NULL;
  if (driver && driver->cuGetErrorString &&
      driver->cuGetErrorString(result, &text) != CUDA_SUCCESS)
    text = NULL;
  lf_status_code_t code = result == CUDA_ERROR_NO_DEVICE
                              ? LF_STATUS_UNAVAILABLE
                              : LF_STATUS_INTERNAL;
  return lf_status_make(code, file, line, "%s: %s (%d): %s", expr,
                        name ? name : "CUDA_ERROR", (int)result,
                        text ? text : "no description from the driver");
}

lf_status_t lf_cuda_driver_load(lf_cuda_driver_t **out_driver) {
  *out_driver = NULL;
  const char *path = getenv("LLM_FUSE_LIBCUDA");
  if (!path || !*path)
    path = "libcuda.so.1";
  lf_cuda_driver_t *driver = calloc(1, sizeof(*driver));
  if (!driver)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  lf_status_t status = LF_OK;
  driver->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!driver->library) {
    const char *why = dlerror();
    status = LF_STATUS(
        LF_STATUS_UNAVAILABLE,
        "no CUDA driver: cannot load %s (%s). Building, PTX/cubin emission "
        "and CPU tests work without it; GPU verification, timing and "
        "swapping need an NVIDIA driver and GPU",
        path, why ? why : "unknown error");
    goto out_free;
  }
#define LF_CU_SYM(field, symbol, params)                                       \
  *(void **)&driver->field = dlsym(driver->library, symbol);                   \
  if (!driver->field) {                                                        \
    status = LF_STATUS(LF_STATUS_UNAVAILABLE,                                  \
                       "%s lacks the entry point %s: the driver is too old "   \
                       "or not NVIDIA's",                                      \
                       path, symbol);                                          \
    goto out_close;                                                            \
  }
#include "runtime/cuda_symbols.inc"
#undef LF_CU_SYM

  status = lf_cuda_result_to_status(driver, driver->cuInit(0), "cuInit(0)",
                                    __FILE__, __LINE__);
  if (status) {
    status = lf_status_annotate(status, "the CUDA driver loaded from %s "
                                        "found no usable GPU",
                                path);
    goto out_close;
  }
  status = lf_cuda_result_to_status(
      driver, driver->cuDriverGetVersion(&driver->version),
      "cuDriverGetVersion", __FILE__, __LINE__);
  if (status)
    goto out_close;
  *out_driver = driver;
  return LF_OK;

out_close:
  dlclose(driver->library);
out_free:
  free(driver);
  return status;
}

void lf_cuda_driver_unload(lf_cuda_driver_t *driver) {
  if (!driver)
    return;
  if (driver->library)
    dlclose(driver->library);
  free(driver);
}

lf_status_t lf_cuda_device_count(const lf_cuda_driver_t *driver,
                                 int *out_count) {
  *out_count = 0;
  LF_CU_RETURN_IF_ERROR(driver, cuDeviceGetCount(out_count));
  return LF_OK;
}

lf_status_t lf_cuda_device_info(const lf_cuda_driver_t *driver, int ordinal,
                                lf_cuda_device_info_t *out_info) {
  memset(out_info, 0, sizeof(*out_info));
  out_info->ordinal = ordinal;
  CUdevice device;
  LF_CU_RETURN_IF_ERROR(driver, cuDeviceGet(&device, ordinal));
  LF_CU_RETURN_IF_ERROR(driver, cuDeviceGetName(out_info->name,
                                                (int)sizeof(out_info->name) - 1,
                                                device));
  LF_CU_RETURN_IF_ERROR(
      driver, cuDeviceGetAttribute(&out_info->cc_major,
                                   CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                   device));
  LF_CU_RETURN_IF_ERROR(
      driver, cuDeviceGetAttribute(&out_info->cc_minor,
                                   CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                   device));
  LF_CU_RETURN_IF_ERROR(
      driver, cuDeviceGetAttribute(&out_info->multiprocessors,
                                   CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                   device));
  LF_CU_RETURN_IF_ERROR(driver,
                        cuDeviceTotalMem(&out_info->memory_bytes, device));
  return LF_OK;
}
