/* verify_client.c - spawns llm-fuse-verify under a watchdog, reads its
 * verdict. */
#include "runtime/verify_client.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"

void lf_verify_request_init(lf_verify_request_t *r) {
  memset(r, 0, sizeof(*r));
  r->seed = 1;
  r->trials = 5;
  r->timing = true;
  r->floor_ms = 60000;
  r->reference_factor = 400;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Finds the worker; writes its path into `out`. */
static bool find_worker(const char *given, char *out, size_t n) {
  if (given && *given) {
    snprintf(out, n, "%s", given);
    return access(out, X_OK) == 0;
  }
  const char *env = getenv("LLM_FUSE_VERIFY");
  if (env && *env) {
    snprintf(out, n, "%s", env);
    return access(out, X_OK) == 0;
  }
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0)
    return false;
  self[len] = 0;
  char *slash = strrchr(self, '/');
  if (!slash)
    return false;
  *slash = 0;
  static const char *const rel[] = {"/llm-fuse-verify",
                                    "/../bin/llm-fuse-verify"};
  for (int i = 0; i < 2; ++i) {
    if (strlen(self) + strlen(rel[i]) >= n)
      return false;
    strcpy(out, self);
    strcat(out, rel[i]);
    if (access(out, X_OK) == 0)
      return true;
  }
  return false;
}

static lf_status_t reject(lf_verdict_t *out, const char *reason,
                          const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static lf_status_t reject(lf_verdict_t *out, const char *reason,
                          const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return lf_verdict_reject(reason, msg, out);
}

/* The last `max` bytes of `buf`, one line, for a message. */
static const char *tail(lf_strbuf_t *buf, size_t max) {
  if (!buf->data)
    return "";
  char *p = buf->data + (buf->len > max ? buf->len - max : 0);
  for (char *c = p; *c; ++c)
    if (*c == '\n' || *c == '\r')
      *c = ' ';
  return p;
}

lf_status_t lf_verify_candidate(const lf_verify_request_t *req,
                                lf_verdict_t *out) {
  memset(out, 0, sizeof(*out));
  if (!req->plan_path || !req->candidate_path)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "lf_verify_candidate needs a plan and a candidate");
  char worker[PATH_MAX];
  if (!find_worker(req->worker, worker, sizeof(worker)))
    return reject(out, "no-worker",
                  "the verification worker llm-fuse-verify was not found "
                  "(set LLM_FUSE_VERIFY or install it beside the compiler): "
                  "nothing is verified, so nothing is swapped in");

  char seed[32], trials[16], flops[32], speed[32];
  snprintf(seed, sizeof(seed), "%llu", (unsigned long long)req->seed);
  snprintf(trials, sizeof(trials), "%d", req->trials);
  snprintf(flops, sizeof(flops), "%.17g", req->flops);
  snprintf(speed, sizeof(speed), "%.17g", req->min_speedup);
  const char *argv[64];
  int argc = 0;
  argv[argc++] = worker;
  argv[argc++] = "--plan";
  argv[argc++] = req->plan_path;
  argv[argc++] = "--candidate";
  argv[argc++] = req->candidate_path;
  argv[argc++] = "--seed";
  argv[argc++] = seed;
  argv[argc++] = "--trials";
  argv[argc++] = trials;
  argv[argc++] = "--flops";
  argv[argc++] = flops;
  argv[argc++] = "--min-speedup";
  argv[argc++] = speed;
  argv[argc++] = "--progress-fd";
  argv[argc++] = "3";
  if (req->atomics)
    argv[argc++] = "--atomics";
  if (req->lenient_nonfinite)
    argv[argc++] = "--lenient-nonfinite";
  if (!req->timing)
    argv[argc++] = "--no-timing";
  for (int i = 0; req->extra_args && req->extra_args[i] && argc < 62; ++i)
    argv[argc++] = req->extra_args[i];
  argv[argc] = NULL;

  int po[2] = {-1, -1}, pe[2] = {-1, -1}, pp[2] = {-1, -1};
  if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC) || pipe2(pp, O_CLOEXEC)) {
    int e = errno;
    for (int i = 0; i < 2; ++i) {
      if (po[i] >= 0)
        close(po[i]);
      if (pe[i] >= 0)
        close(pe[i]);
      if (pp[i] >= 0)
        close(pp[i]);
    }
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "pipe: %s", strerror(e));
  }
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    for (int i = 0; i < 2; ++i) {
      close(po[i]);
      close(pe[i]);
      close(pp[i]);
    }
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "fork: %s", strerror(e));
  }
  if (pid == 0) {
    /* the child: its own process group, so the watchdog kills all of it */
    setpgid(0, 0);
    int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, 0) < 0 || dup2(po[1], 1) < 0 ||
        dup2(pe[1], 2) < 0 || dup2(pp[1], 3) < 0)
      _exit(127);
    execv(worker, (char *const *)argv);
    dprintf(2, "cannot run %s: %s\n", worker, strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid); /* also here: no window where the group is missing */
  close(po[1]);
  close(pe[1]);
  close(pp[1]);

  lf_strbuf_t so, se, sp;
  lf_strbuf_init(&so, 16u << 20);
  lf_strbuf_init(&se, 1u << 20);
  lf_strbuf_init(&sp, 4096);
  struct pollfd fds[3] = {
      {po[0], POLLIN, 0}, {pe[0], POLLIN, 0}, {pp[0], POLLIN, 0}};
  lf_strbuf_t *bufs[3] = {&so, &se, &sp};
  double start = now_ms(), limit = req->floor_ms, ref_ms = -1;
  bool killed = false, exited = false;
  int wstatus = 0, open_fds = 3;
  while (!exited) {
    double left = start + limit - now_ms();
    if (left <= 0) {
      kill(-pid, SIGKILL);
      killed = true;
      waitpid(pid, &wstatus, 0);
      break;
    }
    if (open_fds == 0) {
      pid_t r = waitpid(pid, &wstatus, WNOHANG);
      if (r == pid) {
        exited = true;
        break;
      }
      struct timespec ts = {0, 5000000};
      nanosleep(&ts, NULL);
      continue;
    }
    int n = poll(fds, 3, left > 100 ? 100 : (int)left + 1);
    if (n < 0 && errno != EINTR)
      break;
    for (int i = 0; i < 3; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      char chunk[65536];
      ssize_t got = read(fds[i].fd, chunk, sizeof(chunk));
      if (got > 0) {
        lf_status_free(lf_strbuf_append(bufs[i], chunk, (size_t)got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
    if (ref_ms < 0 && sp.data) {
      const char *line = strstr(sp.data, "reference-ms ");
      if (line && strchr(line, '\n')) {
        ref_ms = strtod(line + 13, NULL);
        if (ref_ms >= 0)
          limit = req->floor_ms + req->reference_factor * ref_ms;
      }
    }
  }
  for (int i = 0; i < 3; ++i)
    if (fds[i].fd >= 0)
      close(fds[i].fd);
  kill(-pid, SIGKILL); /* anything the worker left behind in its group */
  double took = now_ms() - start;

  lf_status_t status = LF_OK;
  if (killed && so.len && !lf_verdict_parse(so.data, so.len, out)) {
    /* a worker that printed its rejection, then hung on the way out (a
     * kernel still running while the driver tears the context down) */
    if (out->accepted) {
      lf_verdict_free(out);
      status = reject(out, "watchdog-timeout",
                      "the verification worker accepted, then did not exit "
                      "within %.0f ms",
                      limit);
    }
  } else if (killed) {
    status = reject(out, "watchdog-timeout",
                    "the verification worker ran past its limit of %.0f ms "
                    "(floor %.0f ms + %.0f x the reference's %.3f ms) and "
                    "was killed with its process group",
                    limit, req->floor_ms, req->reference_factor,
                    ref_ms < 0 ? 0.0 : ref_ms);
  } else if (!exited) {
    kill(-pid, SIGKILL);
    waitpid(pid, &wstatus, 0);
    status = reject(out, "crash", "lost track of the verification worker: %s",
                    strerror(errno));
  } else if (WIFSIGNALED(wstatus)) {
    status = reject(out, "crash",
                    "the verification worker died of signal %d (%s) after "
                    "%.0f ms; its last words: %s",
                    WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)), took,
                    tail(&se, 600));
  } else if (!so.len) {
    status = reject(out, "no-verdict",
                    "the verification worker exited with status %d and no "
                    "verdict; its last words: %s",
                    WEXITSTATUS(wstatus), tail(&se, 600));
  } else {
    lf_status_t parse = lf_verdict_parse(so.data, so.len, out);
    int code = WEXITSTATUS(wstatus);
    if (parse) {
      char m[512];
      lf_status_format(parse, m, sizeof(m));
      lf_status_free(parse);
      status = reject(out, "malformed-verdict",
                      "the verification worker (exit status %d) printed no "
                      "valid verdict: %s",
                      code, m);
    } else if (out->accepted != (code == 0)) {
      bool accepted = out->accepted;
      lf_verdict_free(out);
      status = reject(out, "malformed-verdict",
                      "the verdict says %s but the worker exited with status "
                      "%d",
                      accepted ? "accepted" : "rejected", code);
    }
  }
  lf_strbuf_free(&so);
  lf_strbuf_free(&se);
  lf_strbuf_free(&sp);
  return status;
}
