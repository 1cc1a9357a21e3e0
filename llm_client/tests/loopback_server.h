/* loopback_server.h - the llm_client tests' way of running a Python chat
 * server on loopback: start it with its arguments, read the port it prints
 * on stdout, and stop it by closing its stdin (it exits at EOF), killing
 * it if it lingers. Header-only, for tests. */
#ifndef LF_LLM_CLIENT_TESTS_LOOPBACK_SERVER_H
#define LF_LLM_CLIENT_TESTS_LOOPBACK_SERVER_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct lf_test_server_s {
  pid_t pid;
  int stdin_fd;
  int port;
  char base_url[64]; /* http://127.0.0.1:<port>/v1 */
} lf_test_server_t;

/// Runs argv (argv[0] the executable) and waits up to 15 s for the port.
static inline bool lf_test_server_start(lf_test_server_t *s,
                                        char *const argv[]) {
  s->pid = -1, s->stdin_fd = -1, s->port = 0, s->base_url[0] = '\0';
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0)
    return false;
  s->pid = fork();
  if (s->pid < 0)
    return false;
  if (s->pid == 0) {
    dup2(to_child[0], STDIN_FILENO);
    dup2(from_child[1], STDOUT_FILENO);
    close(to_child[0]), close(to_child[1]);
    close(from_child[0]), close(from_child[1]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  s->stdin_fd = to_child[1];
  char line[32] = "";
  size_t n = 0;
  while (n + 1 < sizeof(line)) {
    struct pollfd p = {from_child[0], POLLIN, 0};
    if (poll(&p, 1, 15000) <= 0)
      break;
    if (read(from_child[0], line + n, 1) <= 0 || line[n] == '\n')
      break;
    ++n;
  }
  line[n] = '\0';
  close(from_child[0]);
  s->port = atoi(line);
  snprintf(s->base_url, sizeof(s->base_url), "http://127.0.0.1:%d/v1",
           s->port);
  return s->port > 0;
}

/// Closes its stdin, waits up to 2 s, then kills it. Idempotent.
static inline void lf_test_server_stop(lf_test_server_t *s) {
  if (s->stdin_fd >= 0)
    close(s->stdin_fd);
  s->stdin_fd = -1;
  if (s->pid <= 0)
    return;
  for (int i = 0; i < 100; ++i) {
    if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
      s->pid = -1;
      return;
    }
    usleep(20000);
  }
  kill(s->pid, SIGKILL);
  waitpid(s->pid, NULL, 0);
  s->pid = -1;
}

#endif /* LF_LLM_CLIENT_TESTS_LOOPBACK_SERVER_H */
