/* server.c - a pre-started build server (a zygote) for lf_build_kernel().
 *
 * Starting llm-fuse-build-kernel costs about 85 ms before its main() runs
 * (the dynamic linker relocates libMLIR and libLLVM). The server is that
 * tool started once per process (`llm-fuse-build-kernel --serve 3`, from
 * the first build on), already linked and loaded; each build is a fork of
 * it, so the relocation is paid once. The isolation of a build is the one
 * lf_subprocess_run() gives a plain child:
 *
 *   the pass ----control socket (fd passing)----> server S (fork loop)
 *     |                                              | fork per build
 *     +--per-build socket: request, started, done--> runner R
 *                                                    | fork
 *                                                    build B: own process
 *                                                    group, limits, log
 *
 * - B is what `llm-fuse-build-kernel --in-process ARGS` would be after its
 *   exec: its own process group, stdin /dev/null, stdout and stderr to the
 *   log, RLIMIT_AS / CPU / CORE / STACK set after the fork, SIGKILL when R
 *   dies; it runs the tool's main on the request's argv and exits.
 * - R watches B as lf_subprocess_run() watches a plain child: the deadline
 *   counts from B's fork; at the deadline and when B ends R kills B's whole
 *   group (ptxas included) while B is not yet reaped (its group id cannot be
 *   reused), then reaps it and reports how it ended (exit code, signal,
 *   timeout, wall and CPU time). If the pass closes its end (it died), R
 *   kills the group at once. One R per build, so builds run concurrently.
 * - S does nothing but accept sockets and fork; it exits when the pass's
 *   end of the control socket closes (the pass exited).
 *
 * Failures of the machinery are not the kernel's: if S cannot be started,
 * has died (the control socket refuses the request), or a runner vanishes
 * before it reports, lf_build_server_run() says "not served" and the caller
 * runs the plain child instead; the server is then not used again in this
 * process. LLM_FUSE_BUILD_SERVER=0 turns the server off.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "builder/internal.h"

#define MSG_MAGIC 0x6c66627du /* "lfb}" */
#define MAX_REQUEST (60u * 1024u)
#define CTL_FD 3
/* How long past its deadline a build may take to be reported before the
 * pass kills its process group itself. */
#define GRACE_MS 5000
/* How long a build may wait for the server to fork it. */
#define STARTUP_MS 10000

enum { MSG_STARTED = 1, MSG_DONE = 2 };

typedef struct req_hdr_s {
  uint32_t magic;
  uint32_t argc;
  int64_t timeout_ms, memory_bytes, cpu_seconds;
  uint32_t strings_len; /* output path, then argv, each NUL-terminated */
} req_hdr_t;

typedef struct reply_s {
  uint32_t magic;
  uint32_t type;
  int32_t pid;        /* MSG_STARTED: the build (its process group) */
  int32_t server_pid; /* MSG_STARTED: S */
  int32_t timed_out, signaled, signal, exit_code;
  double ms, cpu_ms;
} reply_t;

/* ---- The server side (llm-fuse-build-kernel --serve) -------------------- */

static void default_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_DFL;
  sigaction(SIGCHLD, &sa, NULL);
  sigaction(SIGPIPE, &sa, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

static double cpu_of(const struct rusage *ru) {
  return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1e3 +
         (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e3;
}

static void send_reply(int sock, const reply_t *m) {
  while (send(sock, m, sizeof(*m), MSG_NOSIGNAL) < 0 && errno == EINTR)
    ;
}

/* The build B, after R's fork: the plain child's setup, then the tool. */
static void run_build(int sock, const req_hdr_t *h, pid_t runner, char **argv,
                      int out_fd, int null_fd, lf_build_server_fn_t run) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != runner) /* R died before the prctl */
    _exit(1);
  default_signals();
  dup2(null_fd, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  if (out_fd > STDERR_FILENO)
    close(out_fd);
  if (null_fd > STDERR_FILENO)
    close(null_fd);
  close(sock);
  lf_child_limits(h->memory_bytes, h->cpu_seconds);
  exit(run((int)h->argc, argv));
}

/* Waits until B (pidfd or pid) has ended, its deadline passed, or the pass
 * hung up. Returns 0 ended, 1 deadline, 2 the pass is gone. */
static int watch(pid_t pid, int sock, double start, int64_t timeout_ms) {
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  long sleep_us = 200;
  int why = 0;
  for (;;) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    int r = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid)
      break;
    if (r < 0 && errno != EINTR)
      break;
    double left =
        timeout_ms > 0 ? (double)timeout_ms - (lf_now_ms() - start) : 1e9;
    if (left <= 0) {
      why = 1;
      break;
    }
    struct pollfd p[2] = {{sock, POLLIN, 0}, {pidfd, POLLIN, 0}};
    struct timespec ts;
    if (pidfd >= 0) {
      double wait_ms = left < 1e6 ? left : 1e6;
      ts.tv_sec = (time_t)(wait_ms / 1e3);
      ts.tv_nsec = (long)((wait_ms - (double)ts.tv_sec * 1e3) * 1e6);
    } else {
      ts.tv_sec = 0;
      ts.tv_nsec = sleep_us * 1000;
      if (sleep_us < 5000)
        sleep_us *= 2;
    }
    int n = ppoll(p, pidfd >= 0 ? 2 : 1, &ts, NULL);
    if (n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      why = 2; /* the pass sends nothing after the request: it is gone */
      break;
    }
  }
  if (pidfd >= 0)
    close(pidfd);
  return why;
}

/* Runner R: one build. Never returns. */
static void runner(int sock, lf_build_server_fn_t run) {
  default_signals();
  static char buf[MAX_REQUEST + 1];
  ssize_t n;
  while ((n = recv(sock, buf, MAX_REQUEST, 0)) < 0 && errno == EINTR)
    ;
  req_hdr_t h;
  if (n < (ssize_t)sizeof(h))
    _exit(0);
  memcpy(&h, buf, sizeof(h));
  size_t len = (size_t)n - sizeof(h);
  if (h.magic != MSG_MAGIC || h.strings_len != len || h.argc < 1 ||
      h.argc > 64 || len == 0 || buf[n - 1] != '\0')
    _exit(0);
  buf[n] = '\0';
  char *p = buf + sizeof(h), *end = buf + n;
  const char *out_path = p;
  p += strlen(p) + 1;
  char *argv[65];
  for (uint32_t i = 0; i < h.argc; ++i) {
    if (p >= end)
      _exit(0);
    argv[i] = p;
    p += strlen(p) + 1;
  }
  argv[h.argc] = NULL;

  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  int out_fd =
      out_path[0]
          ? open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)
          : dup(null_fd);
  if (null_fd < 0 || out_fd < 0)
    _exit(0);
  double start = lf_now_ms();
  pid_t self = getpid();
  pid_t pid = fork();
  if (pid == 0)
    run_build(sock, &h, self, argv, out_fd, null_fd, run);
  close(out_fd);
  close(null_fd);
  if (pid < 0)
    _exit(0);
  setpgid(pid, pid); /* also here: a kill cannot race B's own setpgid */
  reply_t m;
  memset(&m, 0, sizeof(m));
  m.magic = MSG_MAGIC;
  m.type = MSG_STARTED;
  m.pid = pid;
  m.server_pid = getppid();
  send_reply(sock, &m);

  int why = watch(pid, sock, start, h.timeout_ms);
  kill(-pid, SIGKILL);
  int wstatus = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof(ru));
  while (wait4(pid, &wstatus, 0, &ru) < 0 && errno == EINTR)
    ;
  if (why == 2)
    _exit(0);
  memset(&m, 0, sizeof(m));
  m.magic = MSG_MAGIC;
  m.type = MSG_DONE;
  m.pid = pid;
  m.timed_out = why == 1;
  m.ms = lf_now_ms() - start;
  m.cpu_ms = cpu_of(&ru);
  if (!m.timed_out && WIFSIGNALED(wstatus)) {
    m.signaled = 1;
    m.signal = WTERMSIG(wstatus);
  } else if (!m.timed_out && WIFEXITED(wstatus)) {
    m.exit_code = WEXITSTATUS(wstatus);
  }
  send_reply(sock, &m);
  _exit(0);
}

int lf_build_server_main(int ctl, lf_build_server_fn_t run) {
  setpgid(0, 0);
  if (getenv("LLM_FUSE_BUILD_SERVER_BIND_NOW")) { /* start_server's */
    unsetenv("LD_BIND_NOW");
    unsetenv("LLM_FUSE_BUILD_SERVER_BIND_NOW");
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_IGN; /* runners are reaped by the kernel */
  sigaction(SIGCHLD, &sa, NULL);
  sigaction(SIGPIPE, &sa, NULL);
  for (;;) {
    char byte;
    struct iovec iov = {&byte, 1};
    union {
      char buf[CMSG_SPACE(sizeof(int))];
      struct cmsghdr align;
    } u;
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof(u.buf);
    ssize_t n = recvmsg(ctl, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return 0; /* the pass has gone */
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
        c->cmsg_len != CMSG_LEN(sizeof(int)))
      continue;
    int sock;
    memcpy(&sock, CMSG_DATA(c), sizeof(int));
    pid_t pid = fork();
    if (pid == 0) {
      close(ctl);
      runner(sock, run);
    }
    close(sock); /* a failed fork: the pass sees the socket close */
  }
}

/* ---- The pass's side ---------------------------------------------------- */

static struct {
  pthread_mutex_t mu;
  int state; /* 0 not started, 1 up, 2 dead or off */
  int ctl;
  char *tool;
  pid_t pid;
  int served, fallbacks;
} server = {PTHREAD_MUTEX_INITIALIZER, 0, -1, NULL, 0, 0, 0};

/* Starts S (under server.mu): a double fork, so that S is not our child
 * (no zombie, no SIGCHLD here) and lives until our end of ctl closes. */
static bool start_server(const char *tool) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return false;
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) {
    close(sv[0]);
    close(sv[1]);
    return false;
  }
  /* S's environment: ours, plus LD_BIND_NOW=1 (unless set already), so
   * that the dynamic linker resolves every symbol of libMLIR and libLLVM
   * once, in S, rather than lazily in each build; S removes it again
   * (builds and their ptxas get our environment). */
  extern char **environ;
  size_t nenv = 0;
  while (environ[nenv])
    ++nenv;
  char **envp = calloc(nenv + 3, sizeof(*envp));
  if (!envp) {
    close(sv[0]);
    close(sv[1]);
    close(null_fd);
    return false;
  }
  memcpy(envp, environ, nenv * sizeof(*envp));
  if (!getenv("LD_BIND_NOW")) {
    envp[nenv++] = "LD_BIND_NOW=1";
    envp[nenv++] = "LLM_FUSE_BUILD_SERVER_BIND_NOW=1";
  }
  pid_t pid = fork();
  if (pid == 0) {
    /* Between fork and exec only async-signal-safe calls. */
    if (fork() != 0)
      _exit(0);
    setpgid(0, 0);
    default_signals();
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    dup2(null_fd, STDERR_FILENO);
    if (sv[1] == CTL_FD)
      fcntl(CTL_FD, F_SETFD, 0);
    else
      dup2(sv[1], CTL_FD);
    /* As a plain child gets it (crashes reproduce from run to run). */
    struct rlimit stack = {8ull << 20, 8ull << 20};
    setrlimit(RLIMIT_STACK, &stack); /* best effort */
    char *const argv[] = {(char *)tool, "--serve", "3", NULL};
    execve(tool, argv, envp);
    _exit(127);
  }
  free(envp);
  close(sv[1]);
  close(null_fd);
  if (pid < 0) {
    close(sv[0]);
    return false;
  }
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
  server.ctl = sv[0];
  return true;
}

static void server_dead_locked(void) {
  if (server.ctl >= 0)
    close(server.ctl); /* S exits when it sees the end */
  server.ctl = -1;
  server.state = 2;
}

static void server_dead(void) {
  pthread_mutex_lock(&server.mu);
  server_dead_locked();
  pthread_mutex_unlock(&server.mu);
}

static bool server_enabled(void) {
  const char *e = getenv("LLM_FUSE_BUILD_SERVER");
  return !(e && strcmp(e, "0") == 0);
}

/* Receives one reply of `type` before `deadline` (lf_now_ms); 0 ok, 1 the
 * deadline passed, -1 the socket closed or said something else. */
static int receive(int fd, uint32_t type, double deadline, reply_t *m) {
  for (;;) {
    double left = deadline - lf_now_ms();
    if (left <= 0)
      return 1;
    struct pollfd p = {fd, POLLIN, 0};
    int n = poll(&p, 1, left > 60000 ? 60000 : (int)left + 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      continue;
    ssize_t r = recv(fd, m, sizeof(*m), 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r != (ssize_t)sizeof(*m) || m->magic != MSG_MAGIC || m->type != type)
      return -1;
    return 0;
  }
}

bool lf_build_server_run(const char *tool, const lf_subprocess_t *spec,
                         lf_subprocess_outcome_t *out) {
  memset(out, 0, sizeof(*out));
  if (!server_enabled())
    return false;
  /* The request: header, output path, argv. */
  size_t len = strlen(spec->output_path ? spec->output_path : "") + 1;
  uint32_t argc = 0;
  for (; spec->argv[argc]; ++argc)
    len += strlen(spec->argv[argc]) + 1;
  if (argc < 1 || argc > 64 || sizeof(req_hdr_t) + len > MAX_REQUEST)
    return false;
  char *req = malloc(sizeof(req_hdr_t) + len);
  if (!req)
    return false;
  req_hdr_t h = {MSG_MAGIC,         argc,
                 spec->timeout_ms,  spec->memory_bytes,
                 spec->cpu_seconds, (uint32_t)len};
  memcpy(req, &h, sizeof(h));
  char *p = req + sizeof(h);
  p = stpcpy(p, spec->output_path ? spec->output_path : "") + 1;
  for (uint32_t i = 0; i < argc; ++i)
    p = stpcpy(p, spec->argv[i]) + 1;

  int sv[2] = {-1, -1};
  bool served = false;
  pthread_mutex_lock(&server.mu);
  if (server.state == 0) {
    server.state = start_server(tool) ? 1 : 2;
    if (server.state == 1 && !(server.tool = strdup(tool)))
      server_dead_locked();
  }
  if (server.state != 1 || strcmp(server.tool, tool) != 0 ||
      socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    pthread_mutex_unlock(&server.mu);
    goto out_free;
  }
  char byte = 'b';
  struct iovec iov = {&byte, 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof(u));
  struct msghdr msg;
  memset(&msg, 0, sizeof(msg));
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = u.buf;
  msg.msg_controllen = sizeof(u.buf);
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &sv[1], sizeof(int));
  ssize_t sent;
  while ((sent = send(sv[0], req, sizeof(h) + len, MSG_NOSIGNAL)) < 0 &&
         errno == EINTR)
    ;
  if (sent != (ssize_t)(sizeof(h) + len)) {
    pthread_mutex_unlock(&server.mu);
    goto out_close;
  }
  while ((sent = sendmsg(server.ctl, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
    ;
  if (sent != 1) { /* S is gone */
    server_dead_locked();
    ++server.fallbacks;
    pthread_mutex_unlock(&server.mu);
    goto out_close;
  }
  pthread_mutex_unlock(&server.mu);
  close(sv[1]);
  sv[1] = -1;

  /* Started: B exists (R sends it right after the fork). Until then
   * nothing of the build has run, so any failure falls back. */
  double start = lf_now_ms();
  double budget = spec->timeout_ms > 0 ? (double)spec->timeout_ms : 60000.0;
  reply_t m;
  /* S may still be starting (its exec and relocation, on a loaded
   * machine): the build's deadline counts from its fork, so this wait gets
   * a margin of its own. */
  if (receive(sv[0], MSG_STARTED, start + budget + STARTUP_MS, &m) != 0) {
    server_dead();
    goto out_fallback;
  }
  pthread_mutex_lock(&server.mu);
  server.pid = m.server_pid;
  pthread_mutex_unlock(&server.mu);
  pid_t pid = m.pid;
  int r = receive(
      sv[0], MSG_DONE,
      spec->timeout_ms > 0 ? lf_now_ms() + budget + GRACE_MS : 1e300, &m);
  if (r == 1) {
    /* R did not report: kill the build's group ourselves (R is alive or
     * B's group is, so its id is not reused), and stop using S. */
    kill(-pid, SIGKILL);
    server_dead();
    out->timed_out = true;
    out->ms = lf_now_ms() - start;
    served = true;
    goto out_close;
  }
  if (r != 0) {
    /* R died before reporting: B died with it (PDEATHSIG); build again in
     * a plain child. */
    server_dead();
    goto out_fallback;
  }
  out->timed_out = m.timed_out;
  out->signaled = m.signaled;
  out->signal = m.signal;
  out->exit_code = m.exit_code;
  out->ms = m.ms;
  out->cpu_ms = m.cpu_ms;
  served = true;
  pthread_mutex_lock(&server.mu);
  ++server.served;
  pthread_mutex_unlock(&server.mu);
  goto out_close;

out_fallback:
  pthread_mutex_lock(&server.mu);
  ++server.fallbacks;
  pthread_mutex_unlock(&server.mu);
out_close:
  if (sv[0] >= 0)
    close(sv[0]);
  if (sv[1] >= 0)
    close(sv[1]);
out_free:
  free(req);
  return served;
}

void lf_build_server_stats(int *out_served, int *out_fallbacks,
                           int *out_server_pid) {
  pthread_mutex_lock(&server.mu);
  if (out_served)
    *out_served = server.served;
  if (out_fallbacks)
    *out_fallbacks = server.fallbacks;
  if (out_server_pid)
    *out_server_pid = server.state == 1 ? server.pid : 0;
  pthread_mutex_unlock(&server.mu);
}
