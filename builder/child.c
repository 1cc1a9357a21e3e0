/* child.c - the kernel build in a child process, and the process runner it
 * and ptxas share.
 *
 * lf_build_kernel() writes the candidate into a private temporary folder,
 * runs `llm-fuse-build-kernel --in-process` on it in a new process group
 * with resource limits and a wall-clock deadline, and reads back the
 * result.json, kernel.ptx and kernel.cubin the child wrote. A child that
 * dies of a signal, or leaves no result, is a "crash"; one past its
 * deadline (or CPU limit) is a "timeout". Either way the caller lives on.
 * The child is a fork of the pre-started build server (server.c) where
 * there is one, else a fork + exec of the tool (lf_subprocess_run); the
 * result is read back the same way.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "builder/internal.h"

#define TOOL_NAME "llm-fuse-build-kernel"
#define DEFAULT_TIMEOUT_MS 60000
#define DEFAULT_MEMORY_BYTES (8ll << 30)
#define MAX_RESULT_JSON (1u << 20)
#define MAX_PRODUCT_SIZE (64u << 20)

double lf_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

lf_status_t lf_write_file_plain(const char *path, const void *data,
                                size_t size) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot create '%s': %s", path,
                     strerror(errno));
  const char *p = data;
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      lf_status_t s = LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot write '%s': %s",
                                path, strerror(errno));
      close(fd);
      return s;
    }
    p += n;
    size -= (size_t)n;
  }
  if (close(fd) != 0)
    return LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot close '%s': %s", path,
                     strerror(errno));
  return LF_OK;
}

/* ---- Running a process --------------------------------------------------- */

static void set_limit(int resource, int64_t soft, int64_t hard) {
  if (soft <= 0)
    return;
  struct rlimit rl = {(rlim_t)soft, (rlim_t)hard};
  setrlimit(resource, &rl); /* best effort: may not raise a hard limit */
}

void lf_child_limits(int64_t memory_bytes, int64_t cpu_seconds) {
  set_limit(RLIMIT_AS, memory_bytes, memory_bytes);
  /* The hard limit one second past the soft one: at the soft limit the
   * kernel sends SIGXCPU, which the result reports as the CPU limit (with
   * both equal it sends SIGKILL, which read as a crash). */
  set_limit(RLIMIT_CPU, cpu_seconds, cpu_seconds + 1);
  set_limit(RLIMIT_CORE, 0, 0);
  set_limit(RLIMIT_STACK, 8ll << 20, 8ll << 20); /* crashes reproduce from run to run */
}

/* Between fork and exec only async-signal-safe calls. */
static void exec_child(const lf_subprocess_t *spec, int out_fd, int null_fd) {
  if (!spec->same_group)
    setpgid(0, 0);
  /* Dies with us: a killed builder leaves no ptxas behind. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_DFL);
  dup2(null_fd, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  lf_child_limits(spec->memory_bytes, spec->cpu_seconds);
  execv(spec->argv[0], (char *const *)spec->argv);
  _exit(127);
}

lf_status_t lf_subprocess_run(const lf_subprocess_t *spec,
                              lf_subprocess_outcome_t *out) {
  memset(out, 0, sizeof(*out));
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0)
    return LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot open /dev/null: %s",
                     strerror(errno));
  int out_fd = spec->output_path
                   ? open(spec->output_path,
                          O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)
                   : dup(null_fd);
  if (out_fd < 0) {
    lf_status_t s = LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot open '%s': %s",
                              spec->output_path, strerror(errno));
    close(null_fd);
    return s;
  }
  double start = lf_now_ms();
  pid_t pid = fork();
  if (pid == 0)
    exec_child(spec, out_fd, null_fd);
  int fork_errno = errno;
  close(out_fd);
  close(null_fd);
  if (pid < 0)
    return LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot fork for '%s': %s",
                     spec->argv[0], strerror(fork_errno));
  /* Also here, so that a kill at the deadline cannot race the child's own
   * setpgid. */
  if (!spec->same_group)
    setpgid(pid, pid);
  pid_t target = spec->same_group ? pid : -pid;

  /* Watch for the end without reaping (WNOWAIT): while the child is a
   * zombie its process group id cannot be reused, so killing the group
   * (stray grandchildren such as a ptxas) cannot hit another process. */
  long sleep_us = 200;
  for (;;) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    int r = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid)
      break;
    if (r < 0 && errno != EINTR) {
      lf_status_t s =
          LF_STATUS(LF_STATUS_INTERNAL, "waitid: %s", strerror(errno));
      kill(target, SIGKILL);
      while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
      return s;
    }
    if (spec->timeout_ms > 0 &&
        lf_now_ms() - start > (double)spec->timeout_ms) {
      out->timed_out = true;
      break;
    }
    struct timespec ts = {0, sleep_us * 1000};
    nanosleep(&ts, NULL);
    if (sleep_us < 5000)
      sleep_us *= 2;
  }
  kill(target, SIGKILL);
  int wstatus = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof(ru));
  while (wait4(pid, &wstatus, 0, &ru) < 0 && errno == EINTR)
    ;
  out->ms = lf_now_ms() - start;
  out->cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
  if (!out->timed_out && WIFSIGNALED(wstatus)) {
    out->signaled = true;
    out->signal = WTERMSIG(wstatus);
  } else if (!out->timed_out && WIFEXITED(wstatus)) {
    out->exit_code = WEXITSTATUS(wstatus);
  }
  return LF_OK;
}

/* ---- Finding the tool ---------------------------------------------------- */

static bool executable(const char *path) { return access(path, X_OK) == 0; }

/* Tries <dir>/tool and <dir>/../bin/tool for the folder of `file`. */
static char *beside(const char *file) {
  char real[PATH_MAX];
  if (!file || !realpath(file, real))
    return NULL;
  char *slash = strrchr(real, '/');
  if (!slash)
    return NULL;
  *slash = '\0';
  char path[PATH_MAX + 64];
  snprintf(path, sizeof(path), "%s/" TOOL_NAME, real);
  if (executable(path))
    return strdup(path);
  snprintf(path, sizeof(path), "%s/../bin/" TOOL_NAME, real);
  if (executable(path) && realpath(path, real))
    return strdup(real);
  return NULL;
}

lf_status_t lf_build_find_tool(char **out_path) {
  *out_path = NULL;
  const char *env = getenv("LLM_FUSE_BUILD_KERNEL");
  if (env && env[0]) {
    if (!executable(env))
      return LF_STATUS(LF_STATUS_NOT_FOUND,
                       "LLM_FUSE_BUILD_KERNEL='%s' is not executable", env);
    *out_path = strdup(env);
    return *out_path ? LF_OK
                     : LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  /* The binary or shared object this code is linked into (the plugin in
   * lib/, or a tool in bin/), then the running executable. */
  Dl_info info;
  char *found = NULL;
  if (dladdr((void *)&lf_build_find_tool, &info) && info.dli_fname &&
      strchr(info.dli_fname, '/'))
    found = beside(info.dli_fname);
  if (!found)
    found = beside("/proc/self/exe");
  if (!found)
    return LF_STATUS(LF_STATUS_NOT_FOUND,
                     TOOL_NAME " not found beside %s or in ../bin; set "
                               "LLM_FUSE_BUILD_KERNEL",
                     info.dli_fname ? info.dli_fname : "this binary");
  *out_path = found;
  return LF_OK;
}

/* ---- The isolated build -------------------------------------------------- */

typedef struct workdir_s {
  char dir[4096];
  char kernel[4200], result[4200], ptx[4200], cubin[4200], log[4200];
} workdir_t;

static lf_status_t workdir_make(workdir_t *w) {
  const char *tmp = getenv("TMPDIR");
  snprintf(w->dir, sizeof(w->dir), "%s/llm-fuse-build.XXXXXX",
           tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(w->dir))
    return LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot create '%s': %s", w->dir,
                     strerror(errno));
  snprintf(w->kernel, sizeof(w->kernel), "%s/kernel.mlir", w->dir);
  snprintf(w->result, sizeof(w->result), "%s/result.json", w->dir);
  snprintf(w->ptx, sizeof(w->ptx), "%s/kernel.ptx", w->dir);
  snprintf(w->cubin, sizeof(w->cubin), "%s/kernel.cubin", w->dir);
  snprintf(w->log, sizeof(w->log), "%s/child.log", w->dir);
  return LF_OK;
}

static void workdir_remove(workdir_t *w) {
  unlink(w->kernel);
  unlink(w->result);
  unlink(w->ptx);
  unlink(w->cubin);
  unlink(w->log);
  rmdir(w->dir);
}

/* The last "stage: X" line the child logged. */
static void last_stage(const char *log, char *out, size_t size) {
  snprintf(out, size, "startup");
  const char *p = log;
  while ((p = strstr(p, TOOL_NAME ": stage ")) != NULL) {
    p += strlen(TOOL_NAME ": stage ");
    size_t n = strcspn(p, "\n");
    snprintf(out, size, "%.*s", (int)(n < 32 ? n : 32), p);
  }
}

/* Log lines worth showing after a crash: LLVM's fatal errors and the like,
 * not our stage markers. */
static void crash_lines(lf_diag_sink_t *sink, const char *log) {
  lf_strbuf_t keep;
  lf_strbuf_init(&keep, 64 * 1024);
  for (const char *p = log; *p;) {
    size_t n = strcspn(p, "\n");
    if (n > 0 && strncmp(p, TOOL_NAME ": stage ", strlen(TOOL_NAME ": stage ")))
      lf_status_free(lf_strbuf_appendf(&keep, "%.*s\n", (int)n, p));
    p += n + (p[n] == '\n');
  }
  lf_diag_sink_add_output(sink, lf_strbuf_cstr(&keep), lf_strbuf_len(&keep), 3,
                          true);
  lf_strbuf_free(&keep);
}

static lf_status_t crash_result(const lf_subprocess_outcome_t *o,
                                const lf_build_limits_t *limits,
                                const char *log, lf_build_result_t *r) {
  char stage[40];
  last_stage(log, stage, sizeof(stage));
  lf_diag_sink_t sink;
  lf_diag_sink_init(&sink, NULL, 0, 0);
  crash_lines(&sink, log);
  lf_status_t s;
  bool memory = strstr(log, "bad_alloc") || strstr(log, "out of memory");
  if (o->timed_out)
    s = lf_build_result_fail(r, LF_BUILD_TIMEOUT,
                             "the kernel build ran past its %lld ms limit "
                             "(during %s) and was killed",
                             (long long)limits->timeout_ms, stage);
  else if (o->signaled && o->signal == SIGXCPU)
    s = lf_build_result_fail(r, LF_BUILD_TIMEOUT,
                             "the kernel build ran past its %lld s CPU limit "
                             "(during %s)",
                             (long long)limits->cpu_seconds, stage);
  else if (o->signaled)
    s = lf_build_result_fail(r, LF_BUILD_CRASH,
                             "the kernel builder crashed with SIG%s during "
                             "%s%s",
                             sigabbrev_np(o->signal) ? sigabbrev_np(o->signal)
                                                     : "?",
                             stage, memory ? " (out of memory)" : "");
  else
    s = lf_build_result_fail(r, LF_BUILD_CRASH,
                             "the kernel builder exited with code %d during "
                             "%s without a result",
                             o->exit_code, stage);
  if (!s) {
    char *text = lf_diag_sink_take(&sink);
    s = text ? lf_set_capped(&r->diagnostics, text, LF_BUILD_DIAGNOSTICS_CAP)
             : LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    free(text);
  }
  lf_diag_sink_free(&sink);
  return s;
}

static lf_status_t read_product(const char *path, char **data, size_t *size) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, MAX_PRODUCT_SIZE);
  lf_status_t s = lf_read_file(path, &b);
  if (s) {
    lf_strbuf_free(&b);
    if (lf_status_code(s) == LF_STATUS_NOT_FOUND) {
      lf_status_free(s);
      return LF_OK;
    }
    return s;
  }
  *size = lf_strbuf_len(&b);
  *data = lf_strbuf_take(&b);
  return *data ? LF_OK
               : LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
}

lf_status_t lf_build_kernel(const lf_build_request_t *request,
                            const lf_build_limits_t *limits_in,
                            lf_build_result_t **out_result) {
  *out_result = NULL;
  if (!request || !request->signature ||
      (!request->kernel_text && request->kernel_size))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "build request needs a signature and kernel text");
  lf_build_limits_t limits = limits_in ? *limits_in : (lf_build_limits_t){0};
  if (limits.timeout_ms <= 0)
    limits.timeout_ms = DEFAULT_TIMEOUT_MS;
  if (limits.memory_bytes <= 0)
    limits.memory_bytes = DEFAULT_MEMORY_BYTES;
  if (limits.cpu_seconds <= 0)
    limits.cpu_seconds = limits.timeout_ms / 1000 + 5;

  double start = lf_now_ms();
  char *tool = NULL;
  if (limits.tool_path) {
    tool = strdup(limits.tool_path);
    if (!tool)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  } else {
    LF_RETURN_IF_ERROR(lf_build_find_tool(&tool));
  }
  if (!executable(tool)) {
    lf_status_t missing = LF_STATUS(
        LF_STATUS_NOT_FOUND, "kernel builder '%s' is not executable", tool);
    free(tool);
    return missing;
  }

  workdir_t w;
  lf_status_t s = workdir_make(&w);
  if (s)
    goto out_free_tool;
  s = lf_write_file_plain(w.kernel,
                          request->kernel_text ? request->kernel_text : "",
                          request->kernel_size);
  if (s)
    goto out_remove;

  char line_offset[32];
  snprintf(line_offset, sizeof(line_offset), "%d", request->line_offset);
  const char *argv[24];
  int argc = 0;
  argv[argc++] = tool;
  argv[argc++] = "--in-process";
  argv[argc++] = "--quiet";
  argv[argc++] = "--out-dir";
  argv[argc++] = w.dir;
  argv[argc++] = "--signature";
  argv[argc++] = request->signature;
  argv[argc++] = "--line-offset";
  argv[argc++] = line_offset;
  argv[argc++] = "--chip";
  argv[argc++] = request->chip ? request->chip : "sm_90";
  if (request->allow_inline_asm)
    argv[argc++] = "--allow-inline-asm";
  if (request->skip_cubin)
    argv[argc++] = "--no-cubin";
  if (request->ptxas_path) {
    argv[argc++] = "--ptxas";
    argv[argc++] = request->ptxas_path;
  }
  if (request->libdevice_path) {
    argv[argc++] = "--libdevice";
    argv[argc++] = request->libdevice_path;
  }
  argv[argc++] = w.kernel;
  argv[argc] = NULL;

  lf_subprocess_t spec = {.argv = argv,
                          .output_path = w.log,
                          .timeout_ms = limits.timeout_ms,
                          .memory_bytes = limits.memory_bytes,
                          .cpu_seconds = limits.cpu_seconds};
  /* A fork of the pre-started build server where there is one (server.c:
   * the same limits, group, deadline and crash handling), else a plain
   * child. */
  lf_subprocess_outcome_t outcome;
  if (!lf_build_server_run(tool, &spec, &outcome))
    s = lf_subprocess_run(&spec, &outcome);
  if (s)
    goto out_remove;

  lf_strbuf_t log;
  lf_strbuf_init(&log, 256 * 1024);
  lf_status_free(lf_read_file(w.log, &log)); /* a truncated log is fine */

  lf_build_result_t *r = NULL;
  lf_strbuf_t json;
  lf_strbuf_init(&json, MAX_RESULT_JSON);
  bool have_json = !outcome.timed_out && !outcome.signaled &&
                   lf_status_is_ok(s = lf_read_file(w.result, &json));
  lf_status_free(s);
  s = LF_OK;
  if (have_json) {
    s = lf_build_result_from_json(lf_strbuf_cstr(&json), lf_strbuf_len(&json),
                                  &r);
    if (!s && r->kind == LF_BUILD_OK) {
      char *bin = NULL;
      s = read_product(w.ptx, &r->ptx, &r->ptx_size);
      if (!s)
        s = read_product(w.cubin, &bin, &r->cubin_size);
      r->cubin = (uint8_t *)bin;
      if (!s && !r->ptx)
        s = LF_STATUS(LF_STATUS_INTERNAL, "the kernel builder reported "
                                          "success but wrote no PTX");
    }
  } else if (outcome.exit_code == 2 && !outcome.signaled &&
             !outcome.timed_out) {
    /* Usage errors: the tool says why on stderr. */
    s = LF_STATUS(LF_STATUS_INTERNAL, "%s failed: %.400s", tool,
                  lf_strbuf_cstr(&log));
  } else {
    r = lf_build_result_new();
    s = r ? crash_result(&outcome, &limits, lf_strbuf_cstr(&log), r)
          : LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  lf_strbuf_free(&json);
  lf_strbuf_free(&log);
  if (s) {
    lf_build_result_destroy(r);
    goto out_remove;
  }
  r->ms_total = lf_now_ms() - start;
  r->ms_cpu = outcome.cpu_ms;
  *out_result = r;

out_remove:
  workdir_remove(&w);
out_free_tool:
  free(tool);
  return s;
}
