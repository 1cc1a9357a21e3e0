/* toolkit.c - what the rest of llm-fuse needs from the CUDA toolkit the
 * builder uses: the toolchain's versions (a cache key) and fatbins (cubin
 * plus PTX, for swapped-in kernels). One search for the toolkit
 * (lf_find_ptxas) and one way of running its programs (lf_subprocess_run),
 * so a cache key always names the ptxas that built the cubin.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "builder/builder.h"
#include "builder/internal.h"
#include "llvm/Config/llvm-config.h"

#define TOOL_TIMEOUT_MS 60000

/* A private temporary folder under $TMPDIR or /tmp. */
static bool make_temp_dir(char *dir, size_t size, const char *what) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, size, "%s/llm-fuse-%s.XXXXXX", tmp && tmp[0] ? tmp : "/tmp",
           what);
  return mkdtemp(dir) != NULL;
}

static pthread_once_t toolchain_once = PTHREAD_ONCE_INIT;
static char toolchain[160];

static void toolchain_init(void) {
  char version[64] = "none";
  char *ptxas = NULL;
  char dir[4096];
  lf_status_t st = lf_find_ptxas(NULL, &ptxas);
  if (!st && ptxas && make_temp_dir(dir, sizeof(dir), "toolchain")) {
    char log[4200];
    snprintf(log, sizeof(log), "%s/version.txt", dir);
    const char *argv[] = {ptxas, "--version", NULL};
    lf_subprocess_t spec = {.argv = argv,
                            .output_path = log,
                            .timeout_ms = TOOL_TIMEOUT_MS,
                            .same_group = true};
    lf_subprocess_outcome_t outcome;
    lf_strbuf_t out;
    lf_strbuf_init(&out, 64 * 1024);
    if (!lf_subprocess_run(&spec, &outcome) && outcome.exit_code == 0 &&
        !lf_read_file(log, &out)) {
      /* "Cuda compilation tools, release 13.0, V13.0.88" */
      const char *v = strstr(lf_strbuf_cstr(&out), ", V");
      if (!v || sscanf(v + 3, "%63[0-9.]", version) != 1)
        snprintf(version, sizeof(version), "unknown");
    }
    lf_strbuf_free(&out);
    unlink(log);
    rmdir(dir);
  }
  lf_status_free(st);
  free(ptxas);
  snprintf(toolchain, sizeof(toolchain), "llvm-%s;ptxas-%s",
           LLVM_VERSION_STRING, version);
}

const char *lf_build_toolchain(void) {
  pthread_once(&toolchain_once, toolchain_init);
  return toolchain;
}

lf_status_t lf_build_fatbin(const lf_build_result_t *r, char **out_data,
                            size_t *out_size) {
  *out_data = NULL;
  *out_size = 0;
  if (!r || r->kind != LF_BUILD_OK || !r->cubin || !r->ptx || !r->chip ||
      strncmp(r->chip, "sm_", 3) != 0)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "a fatbin needs a built kernel with a cubin and PTX");
  /* fatbinary sits beside ptxas in the toolkit ($LLM_FUSE_FATBINARY wins). */
  char tool[4096];
  const char *env = getenv("LLM_FUSE_FATBINARY");
  if (env && env[0]) {
    snprintf(tool, sizeof(tool), "%s", env);
  } else {
    char *ptxas = NULL;
    LF_RETURN_IF_ERROR(lf_find_ptxas(NULL, &ptxas));
    if (!ptxas)
      return LF_STATUS(LF_STATUS_NOT_FOUND, "no CUDA toolkit (ptxas) found");
    char *slash = strrchr(ptxas, '/');
    snprintf(tool, sizeof(tool), "%.*s/fatbinary",
             slash ? (int)(slash - ptxas) : 1, slash ? ptxas : ".");
    free(ptxas);
  }
  if (access(tool, X_OK) != 0)
    return LF_STATUS(LF_STATUS_NOT_FOUND, "fatbinary not found at %s", tool);

  char dir[4096];
  if (!make_temp_dir(dir, sizeof(dir), "fatbin"))
    return LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot create a folder: %s",
                     strerror(errno));
  char cubin[4200], ptx[4200], fat[4200], log[4200];
  char img1[4300], img2[4300], create[4300];
  snprintf(cubin, sizeof(cubin), "%s/k.cubin", dir);
  snprintf(ptx, sizeof(ptx), "%s/k.ptx", dir);
  snprintf(fat, sizeof(fat), "%s/k.fatbin", dir);
  snprintf(log, sizeof(log), "%s/log.txt", dir);
  snprintf(img1, sizeof(img1), "--image3=kind=elf,sm=%s,file=%s", r->chip + 3,
           cubin);
  snprintf(img2, sizeof(img2), "--image3=kind=ptx,sm=%s,file=%s", r->chip + 3,
           ptx);
  snprintf(create, sizeof(create), "--create=%s", fat);
  lf_status_t st = lf_write_file_plain(cubin, r->cubin, r->cubin_size);
  if (!st)
    st = lf_write_file_plain(ptx, r->ptx, r->ptx_size);
  if (!st) {
    const char *argv[] = {tool, "-64", "--compress=false", create, img1, img2,
                          NULL};
    lf_subprocess_t spec = {.argv = argv,
                            .output_path = log,
                            .timeout_ms = TOOL_TIMEOUT_MS,
                            .same_group = true};
    lf_subprocess_outcome_t outcome;
    st = lf_subprocess_run(&spec, &outcome);
    if (!st && (outcome.timed_out || outcome.signaled || outcome.exit_code))
      st = LF_STATUS(LF_STATUS_INTERNAL, "%s failed (exit %d)", tool,
                     outcome.exit_code);
  }
  if (!st) {
    lf_strbuf_t buf;
    lf_strbuf_init(&buf, 256u << 20);
    st = lf_read_file(fat, &buf);
    if (!st) {
      *out_size = lf_strbuf_len(&buf);
      *out_data = lf_strbuf_take(&buf);
    } else {
      lf_strbuf_free(&buf);
    }
  }
  unlink(cubin);
  unlink(ptx);
  unlink(fat);
  unlink(log);
  rmdir(dir);
  return st;
}
