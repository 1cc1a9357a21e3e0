/* datadir.c - locating data folders: environment, installed, source tree. */
#include "llm_client/datadir.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* <folder of `file`>/../share/llm-fuse/<name>, if that is a folder. */
static bool installed_dir(const char *file, const char *name, char *out,
                          size_t size) {
  char real[PATH_MAX];
  if (!file || !strchr(file, '/') || !realpath(file, real))
    return false;
  char *slash = strrchr(real, '/');
  if (!slash)
    return false;
  *slash = '\0';
  int n = snprintf(out, size, "%s/../share/llm-fuse/%s", real, name);
  return n > 0 && (size_t)n < size && is_dir(out);
}

lf_status_t lf_llm_data_dir(const char *env_var, const char *share_name,
                            const char *compiled, lf_strbuf_t *out) {
  const char *env = env_var ? getenv(env_var) : NULL;
  if (env && env[0])
    return lf_strbuf_append_str(out, env);
  char path[PATH_MAX + 64];
  Dl_info info;
  if (dladdr((void *)&lf_llm_data_dir, &info) &&
      installed_dir(info.dli_fname, share_name, path, sizeof(path)))
    return lf_strbuf_append_str(out, path);
  if (installed_dir("/proc/self/exe", share_name, path, sizeof(path)))
    return lf_strbuf_append_str(out, path);
  return lf_strbuf_append_str(out, compiled);
}
