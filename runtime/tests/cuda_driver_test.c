/* cuda_driver_test.c - runtime/cuda_driver against fake drivers, no GPU. */
#include "runtime/cuda_driver.h"

#include <stdlib.h>

#include "base/testing.h"

static lf_status_t load_with(const char *lib, const char *devices,
                             lf_cuda_driver_t **out) {
  setenv("LLM_FUSE_LIBCUDA", lib, 1);
  setenv("FAKE_CUDA_DEVICES", devices, 1);
  return lf_cuda_driver_load(out);
}

LF_TEST(missing_library_is_explained) {
  lf_cuda_driver_t *d = (lf_cuda_driver_t *)1;
  lf_status_t s = load_with("/nonexistent/libcuda.so.1", "1", &d);
  LF_EXPECT(d == NULL);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_UNAVAILABLE);
  LF_EXPECT(strstr(lf_status_message(s), "no CUDA driver") != NULL);
  LF_EXPECT(strstr(lf_status_message(s), "/nonexistent/libcuda.so.1") != NULL);
  LF_EXPECT(strstr(lf_status_message(s), "CPU tests work without it") != NULL);
  lf_status_free(s);
}

LF_TEST(no_device_reports_driver_error_name_and_text) {
  lf_cuda_driver_t *d = NULL;
  lf_status_t s = load_with(FAKE_LIBCUDA, "0", &d);
  LF_EXPECT(d == NULL);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_UNAVAILABLE);
  const char *m = lf_status_message(s);
  LF_EXPECT(strstr(m, "found no usable GPU") != NULL);
  LF_EXPECT(strstr(m, "cuInit(0): CUDA_ERROR_NO_DEVICE (100): no "
                      "CUDA-capable device is detected") != NULL);
  lf_status_free(s);
}

LF_TEST(missing_entry_point_is_named) {
  lf_cuda_driver_t *d = NULL;
  lf_status_t s = load_with(FAKE_LIBCUDA_NO_TOTALMEM, "1", &d);
  LF_EXPECT(d == NULL);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_UNAVAILABLE);
  LF_EXPECT(strstr(lf_status_message(s), "cuDeviceTotalMem_v2") != NULL);
  lf_status_free(s);
}

LF_TEST(devices_are_described) {
  lf_cuda_driver_t *d = NULL;
  lf_status_t s = load_with(FAKE_LIBCUDA, "2", &d);
  LF_EXPECT(s == LF_OK);
  if (s) {
    lf_status_free(s);
    return;
  }
  LF_EXPECT(d->version == 13000);
  int count = 0;
  LF_EXPECT(lf_cuda_device_count(d, &count) == LF_OK);
  LF_EXPECT(count == 2);
  lf_cuda_device_info_t info;
  LF_EXPECT(lf_cuda_device_info(d, 1, &info) == LF_OK);
  LF_EXPECT_STREQ(info.name, "Fake H200 #1");
  LF_EXPECT(info.cc_major == 9 && info.cc_minor == 0);
  LF_EXPECT(info.multiprocessors == 132);
  LF_EXPECT(info.memory_bytes == (size_t)141 << 30);
  /* An invalid ordinal becomes a status with the driver's own words. */
  s = lf_cuda_device_info(d, 7, &info);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INTERNAL);
  LF_EXPECT(strstr(lf_status_message(s), "CUDA_ERROR_INVALID_DEVICE (101): "
                                         "invalid device ordinal") != NULL);
  lf_status_free(s);
  lf_cuda_driver_unload(d);
  lf_cuda_driver_unload(NULL);
}

LF_TEST(result_without_driver_still_reports_number) {
  lf_status_t s = lf_cuda_result_to_status(NULL, 700, "cuLaunchKernel", "f.c", 3);
  LF_EXPECT(strstr(lf_status_message(s), "cuLaunchKernel: CUDA_ERROR (700)") ==
            lf_status_message(s));
  lf_status_free(s);
  LF_EXPECT(lf_cuda_result_to_status(NULL, 0, "x", "f.c", 1) == LF_OK);
}

int main(void) {
  LF_RUN(missing_library_is_explained);
  LF_RUN(no_device_reports_driver_error_name_and_text);
  LF_RUN(missing_entry_point_is_named);
  LF_RUN(devices_are_described);
  LF_RUN(result_without_driver_still_reports_number);
  return lf_test_finish();
}
