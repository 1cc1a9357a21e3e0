/* guard_test.c - the runtime guard of deferred verification
 * (runtime/mgpu/llm_fuse_guard.h) against a stand-in worker.
 *
 * Each case runs `lf_guard_test --decide KEY` as a fresh process (the
 * guard decides once per process) with the fake worker in some mode and a
 * record file, and checks the decision (the child's exit status), what was
 * recorded, and what a second process decides: accepted and rejected
 * verdicts, crashes and the watchdog persist; a worker that cannot run (no
 * GPU, missing) does not.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/mgpu/llm_fuse_guard.h"

static int failures;

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond);       \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

/* ---- A blob, built as the pass builds one. ---- */

static unsigned char blob[4096];
static size_t blob_size;

static void put_le(uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    blob[blob_size++] = (unsigned char)(v >> (8 * i));
}

static void add_member(const char *name, const char *data) {
  put_le(strlen(name), 4);
  memcpy(blob + blob_size, name, strlen(name));
  blob_size += strlen(name);
  put_le(strlen(data), 8);
  memcpy(blob + blob_size, data, strlen(data));
  blob_size += strlen(data);
}

static void make_blob(const char *key) {
  blob_size = 0;
  memcpy(blob, LF_RT_GUARD_MAGIC, 8);
  blob_size = 8;
  put_le(5, 4);
  add_member("key", key);
  add_member("args", "--flag\n--min-speedup\n1.5");
  add_member("reference/plan.json", "PLANDATA {\"schema\":1}\n");
  add_member("reference/k0.ptx", "// ptx");
  add_member("candidate/result.json", "{\"ok\":true}");
}

/* ---- The child: one decision per process. ---- */

static void *decide_thread(void *arg) {
  *(int32_t *)arg = lf_rt_guard_decide(blob, (int64_t)blob_size);
  return NULL;
}

static int child(const char *key, int threads) {
  make_blob(key);
  if (lf_rt_guard_state(blob, (int64_t)blob_size) != LF_RT_GUARD_UNDECIDED)
    return 10;
  int32_t got[8] = {0};
  pthread_t t[8];
  for (int i = 0; i < threads; ++i)
    pthread_create(&t[i], NULL, decide_thread, &got[i]);
  for (int i = 0; i < threads; ++i)
    pthread_join(t[i], NULL);
  for (int i = 1; i < threads; ++i)
    if (got[i] != got[0])
      return 11;
  /* A second call in the same process never asks again. */
  setenv("LLM_FUSE_VERIFY", "/nonexistent/worker", 1);
  if (lf_rt_guard_decide(blob, (int64_t)blob_size) != got[0] ||
      lf_rt_guard_state(blob, (int64_t)blob_size) != got[0])
    return 12;
  printf("%s\n", lf_rt_guard_reason(blob, (int64_t)blob_size));
  return got[0];
}

/* ---- The driver. ---- */

static char dir[256], record[300], args_log[300], pidfile[300], reason[512];

/* Runs a child deciding `key` with the worker in `mode` (NULL: a missing
 * worker); returns its exit status, the reason in `reason`. */
static int run(const char *self, const char *key, const char *mode,
               int threads) {
  char out[320], th[8];
  snprintf(out, sizeof(out), "%s/child.out", dir);
  snprintf(th, sizeof(th), "%d", threads);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("LLM_FUSE_GUARD_RECORD", record, 1);
    setenv("LLM_FUSE_VERIFY", mode ? FAKE_WORKER : "/nonexistent/worker", 1);
    setenv("FAKE_WORKER_MODE", mode ? mode : "accept", 1);
    setenv("FAKE_WORKER_ARGS", args_log, 1);
    setenv("FAKE_WORKER_PIDFILE", pidfile, 1);
    setenv("LLM_FUSE_GUARD_TIMEOUT_MS", "1500", 1);
    setenv("TMPDIR", dir, 1);
    if (!freopen(out, "w", stdout))
      _exit(20);
    execl(self, self, "--decide", key, th, (char *)NULL);
    _exit(21);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  reason[0] = '\0';
  FILE *f = fopen(out, "r");
  if (f) {
    if (!fgets(reason, sizeof(reason), f))
      reason[0] = '\0';
    reason[strcspn(reason, "\n")] = '\0';
    fclose(f);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

static int count_lines(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  int n = 0;
  char line[2048];
  while (fgets(line, sizeof(line), f))
    n += strstr(line, needle) != NULL;
  fclose(f);
  return n;
}

static int count_entries(const char *path) {
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "ls -A '%s' | grep -c llm-fuse-guard", path);
  FILE *p = popen(cmd, "r");
  int n = -1;
  if (p) {
    if (fscanf(p, "%d", &n) != 1)
      n = -1;
    pclose(p);
  }
  return n;
}

/* Whether process `pid` is dead within 2 s (killed but not yet reaped by
 * init counts as dead). */
static bool gone(int pid) {
  for (int i = 0; i < 200; ++i) {
    if (kill(pid, 0) != 0 && errno == ESRCH)
      return true;
    char path[64], state = 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *st = fopen(path, "r");
    if (st) {
      if (fscanf(st, "%*d (%*[^)]) %c", &state) != 1)
        state = 0;
      fclose(st);
    }
    if (state == 'Z')
      return true;
    usleep(10000);
  }
  return false;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--decide"))
    return child(argv[2], atoi(argv[3]));
  const char *self = GUARD_TEST_SELF;
  snprintf(dir, sizeof(dir), "/tmp/lf-guard-test.XXXXXX");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(record, sizeof(record), "%s/state/sub/guard.jsonl", dir);
  snprintf(args_log, sizeof(args_log), "%s/args.log", dir);
  snprintf(pidfile, sizeof(pidfile), "%s/hang.pid", dir);

  /* Accepted: promoted, recorded, and the next process reads the record
   * (the worker is missing then: it is not asked). */
  int d = run(self, "sg_a:1", "accept", 4);
  EXPECT(d == LF_RT_GUARD_PROMOTED, "accept: decision %d (%s)", d, reason);
  EXPECT(!strcmp(reason, "verified: ok"), "accept: reason '%s'", reason);
  EXPECT(count_lines(record, "\"key\":\"sg_a:1\",\"decision\":\"promoted\"") ==
             1,
         "accept: not recorded once in %s", record);
  /* The worker ran once for four threads, on the staged files, with the
   * blob's extra arguments. */
  EXPECT(count_lines(args_log, "--plan") == 1, "accept: %d worker runs",
         count_lines(args_log, "--plan"));
  EXPECT(count_lines(args_log, "| PLANDATA {\"schema\":1}") == 1,
         "accept: the worker did not read the staged plan");
  EXPECT(count_lines(args_log, "/candidate/result.json --flag --min-speedup "
                               "1.5 |") == 1,
         "accept: extra arguments not passed");
  EXPECT(count_entries(dir) == 0, "the staging folder was not removed");
  d = run(self, "sg_a:1", NULL, 1);
  EXPECT(d == LF_RT_GUARD_PROMOTED && !strcmp(reason, "record"),
         "accept, second process: %d (%s)", d, reason);

  /* Rejected: rolled back for good, even when the worker would accept. */
  d = run(self, "sg_b:1", "reject", 1);
  EXPECT(d == LF_RT_GUARD_ROLLED_BACK && !strcmp(reason, "rejected: mismatch"),
         "reject: %d (%s)", d, reason);
  d = run(self, "sg_b:1", "accept", 1);
  EXPECT(d == LF_RT_GUARD_ROLLED_BACK && !strcmp(reason, "record"),
         "reject, second process: %d (%s)", d, reason);

  /* A crash is a rejection for good. */
  d = run(self, "sg_c:1", "crash", 1);
  EXPECT(d == LF_RT_GUARD_ROLLED_BACK && !strncmp(reason, "crash:", 6),
         "crash: %d (%s)", d, reason);
  d = run(self, "sg_c:1", "accept", 1);
  EXPECT(d == LF_RT_GUARD_ROLLED_BACK, "crash, second process: %d", d);

  /* A hang: the watchdog kills the whole group, a rejection for good. */
  unlink(pidfile);
  d = run(self, "sg_d:1", "hang", 1);
  EXPECT(d == LF_RT_GUARD_ROLLED_BACK &&
             !strncmp(reason, "watchdog-timeout", 16),
         "hang: %d (%s)", d, reason);
  FILE *pf = fopen(pidfile, "r");
  int hang_child = 0;
  if (pf) {
    if (fscanf(pf, "%d", &hang_child) != 1)
      hang_child = 0;
    fclose(pf);
  }
  EXPECT(hang_child > 0 && gone(hang_child),
         "hang: the worker's child %d survived", hang_child);
  d = run(self, "sg_d:1", "accept", 1);
  EXPECT(d == LF_RT_GUARD_ROLLED_BACK, "hang, second process: %d", d);

  /* Could not run (no worker; no GPU): the fallback for this process only,
   * so the next process asks again and may promote. */
  d = run(self, "sg_e:1", NULL, 1);
  EXPECT(d == LF_RT_GUARD_ROLLED_BACK && !strncmp(reason, "no-worker", 9),
         "missing worker: %d (%s)", d, reason);
  d = run(self, "sg_f:1", "no-device", 1);
  EXPECT(d == LF_RT_GUARD_ROLLED_BACK &&
             !strncmp(reason, "could-not-run: no-device", 24),
         "no device: %d (%s)", d, reason);
  EXPECT(count_lines(record, "sg_e:1") == 0 && count_lines(record, "sg_f:1") ==
                                                   0,
         "a worker that could not run was recorded");
  d = run(self, "sg_e:1", "accept", 1);
  EXPECT(d == LF_RT_GUARD_PROMOTED, "missing worker, then accept: %d", d);
  d = run(self, "sg_f:1", "accept", 1);
  EXPECT(d == LF_RT_GUARD_PROMOTED, "no device, then accept: %d", d);

  /* A record that cannot be written: the decision holds, the process
   * survives. */
  char saved[300];
  snprintf(saved, sizeof(saved), "%s", record);
  snprintf(record, sizeof(record), "/proc/no/such/guard.jsonl");
  d = run(self, "sg_g:1", "accept", 1);
  EXPECT(d == LF_RT_GUARD_PROMOTED, "unwritable record: %d (%s)", d, reason);
  snprintf(record, sizeof(record), "%s", saved);

  /* In this process: a malformed blob is the fallback, never a crash. */
  unsigned char bad[16] = "LFGUARD1\xff\xff\xff\xff";
  EXPECT(lf_rt_guard_decide(bad, sizeof(bad)) == LF_RT_GUARD_ROLLED_BACK,
         "a malformed blob was not rolled back");
  EXPECT(lf_rt_guard_decide("short", 5) == LF_RT_GUARD_ROLLED_BACK,
         "a short blob was not rolled back");
  make_blob("../evil");
  setenv("LLM_FUSE_GUARD_RECORD", record, 1);
  EXPECT(lf_rt_guard_decide(blob, (int64_t)blob_size) ==
             LF_RT_GUARD_ROLLED_BACK,
         "a bad key was not rolled back");

  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  if (failures)
    fprintf(stderr, "%d failure(s)\n", failures);
  else
    printf("guard: all cases passed\n");
  return failures != 0;
}
