/* llm-fuse-device-info - reports the CUDA driver and GPUs as JSON.
 *
 * Exit status: 0 when at least one GPU is usable, 2 when there is no driver
 * or no GPU (the reason goes to stderr), 1 on any other failure. The lit
 * suite uses it to decide the `cuda-device` feature.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "runtime/cuda_driver.h"

static void usage(FILE *f) {
  fprintf(f, "usage: llm-fuse-device-info [--quiet]\n"
             "Prints the CUDA driver version and every GPU as JSON on stdout.\n"
             "Exit status 0: a GPU is usable; 2: no driver or no GPU; 1: "
             "other error.\n"
             "LLM_FUSE_LIBCUDA overrides the driver library "
             "(default libcuda.so.1).\n");
}

int main(int argc, char **argv) {
  int quiet = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--quiet") == 0) {
      quiet = 1;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "llm-fuse-device-info: unknown argument '%s'\n", argv[i]);
      usage(stderr);
      return 1;
    }
  }
  lf_log_init_from_env();
  lf_cuda_driver_t *driver = NULL;
  lf_status_t s = lf_cuda_driver_load(&driver);
  if (s) {
    int rc = lf_status_code(s) == LF_STATUS_UNAVAILABLE ? 2 : 1;
    if (!quiet)
      fprintf(stderr, "llm-fuse-device-info: %s\n", lf_status_message(s));
    lf_status_free(s);
    return rc;
  }
  int rc = 1;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "driver_version", driver->version);
  cJSON *list = cJSON_AddArrayToObject(root, "devices");
  int count = 0;
  s = lf_cuda_device_count(driver, &count);
  for (int i = 0; !s && i < count; ++i) {
    lf_cuda_device_info_t info;
    s = lf_cuda_device_info(driver, i, &info);
    if (s)
      break;
    char arch[16];
    snprintf(arch, sizeof(arch), "sm_%d%d", info.cc_major, info.cc_minor);
    cJSON *d = cJSON_CreateObject();
    cJSON_AddItemToArray(list, d);
    cJSON_AddNumberToObject(d, "ordinal", info.ordinal);
    cJSON_AddStringToObject(d, "name", info.name);
    cJSON_AddStringToObject(d, "arch", arch);
    cJSON_AddNumberToObject(d, "multiprocessors", info.multiprocessors);
    cJSON_AddNumberToObject(d, "memory_bytes", (double)info.memory_bytes);
  }
  if (s) {
    fprintf(stderr, "llm-fuse-device-info: %s\n", lf_status_message(s));
    lf_status_free(s);
  } else if (count == 0) {
    if (!quiet)
      fprintf(stderr, "llm-fuse-device-info: the driver reports no GPU\n");
    rc = 2;
  } else {
    char *text = cJSON_Print(root);
    if (!quiet && text)
      printf("%s\n", text);
    cJSON_free(text);
    rc = 0;
  }
  cJSON_Delete(root);
  lf_cuda_driver_unload(driver);
  return rc;
}
