/* fake_verify_worker.c - a stand-in llm-fuse-verify for the client's tests.
 *
 * What it does is chosen by FAKE_WORKER_MODE:
 *   accept     prints an accepted verdict (5 trials), exits 0
 *   reject     prints a rejected verdict ("mismatch"), exits 1
 *   hang       sleeps forever (and so does a child it forks: the watchdog
 *              must kill the whole process group)
 *   slow-ref   reports "reference-ms 50" on fd 3, then hangs: the limit
 *              becomes floor + factor * 50 ms
 *   crash      raises SIGSEGV
 *   silent     exits 1 without a verdict
 *   garbage    prints text that is not JSON, exits 1
 *   liar       prints an accepted verdict but exits 1
 *   few-trials prints an accepted verdict with 2 trials, exits 0
 *   reject-then-hang  prints a rejection ("timeout"), then hangs
 *   no-device  prints a "no-device" rejection, exits 2 (not served)
 * FAKE_WORKER_PIDFILE, when set, receives the pid of the hang child.
 * FAKE_WORKER_ARGS, when set, gets a line appended per run: the arguments,
 * then the first line of the --plan file (or "unreadable").
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *verdict(int accepted, int trials, const char *reason) {
  static char buf[2048];
  char t[512] = "";
  for (int i = 0; i < trials; ++i)
    snprintf(t + strlen(t), sizeof(t) - strlen(t), "%s{\"index\":%d}",
             i ? "," : "", i);
  snprintf(buf, sizeof(buf),
           "{\"schema\":\"llm-fuse-verdict/0\",\"accepted\":%s,\"reason\":"
           "\"%s\",\"message\":\"fake\",\"trials\":[%s],\"timing\":{"
           "\"candidate_ms\":1.5,\"reference_ms\":6,\"speedup\":4}}",
           accepted ? "true" : "false", reason, t);
  return buf;
}

static void hang(void) {
  pid_t child = fork();
  if (child == 0)
    for (;;)
      pause();
  const char *pidfile = getenv("FAKE_WORKER_PIDFILE");
  if (pidfile) {
    FILE *f = fopen(pidfile, "w");
    if (f) {
      fprintf(f, "%d\n", (int)child);
      fclose(f);
    }
  }
  for (;;)
    pause();
}

static void log_args(int argc, char **argv) {
  const char *path = getenv("FAKE_WORKER_ARGS");
  if (!path)
    return;
  FILE *f = fopen(path, "a");
  if (!f)
    return;
  char first[256] = "unreadable";
  for (int i = 1; i < argc; ++i) {
    fprintf(f, "%s ", argv[i]);
    if (!strcmp(argv[i], "--plan") && i + 1 < argc) {
      FILE *p = fopen(argv[i + 1], "r");
      if (p) {
        if (!fgets(first, sizeof(first), p))
          first[0] = '\0';
        first[strcspn(first, "\n")] = '\0';
        fclose(p);
      }
    }
  }
  fprintf(f, "| %s\n", first);
  fclose(f);
}

int main(int argc, char **argv) {
  log_args(argc, argv);
  const char *m = getenv("FAKE_WORKER_MODE");
  if (!m)
    m = "accept";
  if (!strcmp(m, "accept")) {
    printf("%s\n", verdict(1, 5, "ok"));
    return 0;
  }
  if (!strcmp(m, "reject")) {
    printf("%s\n", verdict(0, 1, "mismatch"));
    return 1;
  }
  if (!strcmp(m, "hang"))
    hang();
  if (!strcmp(m, "slow-ref")) {
    dprintf(3, "reference-ms 50\n");
    hang();
  }
  if (!strcmp(m, "crash")) {
    fprintf(stderr, "about to crash\n");
    fflush(stderr);
    raise(SIGSEGV);
  }
  if (!strcmp(m, "silent"))
    return 1;
  if (!strcmp(m, "garbage")) {
    printf("Segmentation fault? {not json\n");
    return 1;
  }
  if (!strcmp(m, "liar")) {
    printf("%s\n", verdict(1, 5, "ok"));
    return 1;
  }
  if (!strcmp(m, "few-trials")) {
    printf("%s\n", verdict(1, 2, "ok"));
    return 0;
  }
  if (!strcmp(m, "reject-then-hang")) {
    printf("%s\n", verdict(0, 1, "timeout"));
    fflush(stdout);
    hang();
  }
  if (!strcmp(m, "no-device")) {
    printf("%s\n", verdict(0, 0, "no-device"));
    return 2;
  }
  return 3;
}
