/* guard.c - the runtime guard of deferred verification (llm_fuse_guard.h):
 * decide once per process whether an embedded candidate kernel runs, by a
 * recorded decision or by running the verification worker on the GPU.
 *
 * The worker's exit status is the verdict (docs/verification.md): 0
 * accepted, 1 rejected, 2 the request could not be served. No JSON parser
 * here: the library links only libc, libdl and pthreads. The verdict's
 * "reason" word is picked out of its text for the record only.
 *
 * The record file holds one JSON object per line, appended with O_APPEND
 * in a single write(2) (lines are far below PIPE_BUF, so concurrent
 * writers do not interleave); the last line for a key wins.
 */
#include "runtime/mgpu/llm_fuse_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"

#define EXPORT __attribute__((visibility("default")))

extern char **environ;

#define MAX_GUARDS 4096
#define MAX_MEMBERS 256
#define KEY_CAP 256
#define REASON_CAP 160

typedef struct guard_s {
  const void *blob;
  int32_t state;
  char reason[REASON_CAP];
} guard_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static guard_t guards[MAX_GUARDS];
static size_t num_guards;

static bool quiet(void) { return getenv("LLM_FUSE_RT_QUIET") != NULL; }

/* ---- The blob. ---- */

typedef struct member_s {
  const char *name;
  size_t name_len;
  const uint8_t *data;
  uint64_t size;
} member_t;

typedef struct blob_s {
  member_t m[MAX_MEMBERS];
  size_t n;
} blob_t;

static uint64_t get_le(const uint8_t *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

/* A member name is a relative path of [A-Za-z0-9._-] components, none of
 * them "." or ".."; the key uses the same characters plus ':' and '/'. */
static bool safe_name(const char *s, size_t n, bool key) {
  if (n == 0 || n >= KEY_CAP)
    return false;
  size_t start = 0;
  for (size_t i = 0; i <= n; ++i) {
    char c = i < n ? s[i] : '/';
    if (c == '/') {
      size_t len = i - start;
      if (len == 0 || (len == 1 && s[start] == '.') ||
          (len == 2 && s[start] == '.' && s[start + 1] == '.'))
        return false;
      start = i + 1;
      continue;
    }
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
          (key && c == ':')))
      return false;
  }
  return true;
}

static bool parse_blob(const void *blob, int64_t size, blob_t *out,
                       char *why, size_t why_n) {
  const uint8_t *p = blob, *end = p + (size > 0 ? size : 0);
  out->n = 0;
  if (!blob || size < 12 || memcmp(p, LF_RT_GUARD_MAGIC, 8)) {
    snprintf(why, why_n, "the embedded blob is not a guard blob");
    return false;
  }
  uint64_t count = get_le(p + 8, 4);
  p += 12;
  if (count > MAX_MEMBERS) {
    snprintf(why, why_n, "the guard blob has %llu members (at most %d)",
             (unsigned long long)count, MAX_MEMBERS);
    return false;
  }
  for (uint64_t i = 0; i < count; ++i) {
    if (end - p < 4)
      goto truncated;
    uint64_t nl = get_le(p, 4);
    p += 4;
    if ((uint64_t)(end - p) < nl + 8)
      goto truncated;
    member_t *m = &out->m[out->n++];
    m->name = (const char *)p;
    m->name_len = nl;
    p += nl;
    m->size = get_le(p, 8);
    p += 8;
    if ((uint64_t)(end - p) < m->size)
      goto truncated;
    m->data = p;
    p += m->size;
    if (!safe_name(m->name, m->name_len, false)) {
      snprintf(why, why_n, "guard blob member %llu has a bad name",
               (unsigned long long)i);
      return false;
    }
  }
  return true;
truncated:
  snprintf(why, why_n, "the guard blob is truncated");
  return false;
}

static const member_t *find_member(const blob_t *b, const char *name) {
  for (size_t i = 0; i < b->n; ++i)
    if (b->m[i].name_len == strlen(name) &&
        !memcmp(b->m[i].name, name, b->m[i].name_len))
      return &b->m[i];
  return NULL;
}

/* A member's data as a NUL-terminated string in `out`; false if missing,
 * too long, or holding a NUL. */
static bool member_text(const blob_t *b, const char *name, char *out,
                        size_t cap) {
  const member_t *m = find_member(b, name);
  if (!m || m->size >= cap || memchr(m->data, '\0', m->size))
    return false;
  memcpy(out, m->data, m->size);
  out[m->size] = '\0';
  return true;
}

/* ---- Files. ---- */

static int make_dirs(char *path) {
  for (char *s = path + 1; *s; ++s) {
    if (*s != '/')
      continue;
    *s = '\0';
    int r = mkdir(path, 0700);
    *s = '/';
    if (r && errno != EEXIST)
      return -1;
  }
  return mkdir(path, 0700) && errno != EEXIST ? -1 : 0;
}

static int make_parent_dirs(const char *file) {
  char dir[4096];
  snprintf(dir, sizeof(dir), "%s", file);
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir)
    return 0;
  *slash = '\0';
  return make_dirs(dir);
}

static int write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int write_member(const char *dir, const member_t *m) {
  char path[4096];
  int len = snprintf(path, sizeof(path), "%s/%.*s", dir, (int)m->name_len,
                     m->name);
  if (len < 0 || (size_t)len >= sizeof(path) || make_parent_dirs(path))
    return -1;
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  int r = write_all(fd, m->data, m->size);
  return close(fd) || r ? -1 : 0;
}

/* Reads at most `cap` - 1 bytes of `path` into `out`; "" when missing. */
static void read_text(const char *path, char *out, size_t cap) {
  out[0] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  size_t n = 0;
  ssize_t r;
  while (n + 1 < cap && (r = read(fd, out + n, cap - 1 - n)) > 0)
    n += (size_t)r;
  out[n] = '\0';
  close(fd);
}

/* The string value of "name" in JSON text `json` (first occurrence, no
 * escapes), into `out`; "" when absent. Enough for the worker's verdict
 * and our own record lines. */
static void json_word(const char *json, const char *name, char *out,
                      size_t cap) {
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\"", name);
  out[0] = '\0';
  const char *p = strstr(json, pat);
  if (!p)
    return;
  p += strlen(pat);
  while (*p == ' ' || *p == ':' || *p == '\t' || *p == '\n')
    ++p;
  if (*p != '"')
    return;
  ++p;
  size_t n = 0;
  while (p[n] && p[n] != '"' && p[n] != '\\' && p[n] != '\n' && n + 1 < cap)
    ++n;
  memcpy(out, p, n);
  out[n] = '\0';
}

/* ---- The record file. ---- */

static bool record_path(const blob_t *b, char *out, size_t cap) {
  const char *env = getenv("LLM_FUSE_GUARD_RECORD");
  if (env && *env)
    return (size_t)snprintf(out, cap, "%s", env) < cap;
  if (member_text(b, "record", out, cap) && out[0])
    return true;
  const char *xdg = getenv("XDG_STATE_HOME");
  if (xdg && *xdg)
    return (size_t)snprintf(out, cap, "%s/llm-fuse/guard.jsonl", xdg) < cap;
  const char *home = getenv("HOME");
  if (home && *home)
    return (size_t)snprintf(out, cap, "%s/.local/state/llm-fuse/guard.jsonl",
                            home) < cap;
  return false;
}

/* The last recorded decision for `key`: LF_RT_GUARD_PROMOTED or
 * _ROLLED_BACK, or 0 when there is none. */
static int32_t record_lookup(const char *path, const char *key) {
  FILE *f = fopen(path, "re");
  if (!f)
    return 0;
  int32_t found = 0;
  char line[2048], k[KEY_CAP], d[64];
  while (fgets(line, sizeof(line), f)) {
    json_word(line, "key", k, sizeof(k));
    if (strcmp(k, key))
      continue;
    json_word(line, "decision", d, sizeof(d));
    if (!strcmp(d, "promoted"))
      found = LF_RT_GUARD_PROMOTED;
    else if (!strcmp(d, "rolled-back"))
      found = LF_RT_GUARD_ROLLED_BACK;
  }
  fclose(f);
  return found;
}

/* Appends one line; returns 0 or -1 with errno. */
static int record_append(const char *path, const char *key, int32_t decision,
                         const char *reason) {
  char when[32] = "";
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm))
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
  char safe_reason[REASON_CAP];
  size_t n = 0;
  for (const char *r = reason; *r && n + 1 < sizeof(safe_reason); ++r)
    safe_reason[n++] = (*r == '"' || *r == '\\' || (unsigned char)*r < 0x20)
                           ? '\''
                           : *r;
  safe_reason[n] = '\0';
  char line[1024];
  int len = snprintf(
      line, sizeof(line),
      "{\"key\":\"%s\",\"decision\":\"%s\",\"reason\":\"%s\",\"time\":\"%s\","
      "\"pid\":%ld}\n",
      key, decision == LF_RT_GUARD_PROMOTED ? "promoted" : "rolled-back",
      safe_reason, when, (long)getpid());
  if (len < 0 || (size_t)len >= sizeof(line)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  if (make_parent_dirs(path))
    return -1;
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  int r = write_all(fd, line, (size_t)len);
  return close(fd) || r ? -1 : 0;
}

/* ---- The worker. ---- */

typedef enum outcome_e {
  OUT_ACCEPTED,
  OUT_REJECTED,     /* for good: the verdict, a crash, the watchdog */
  OUT_COULD_NOT_RUN /* this process only: no GPU, no worker */
} outcome_t;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Runs the worker on the staged folder `dir`; `reason` receives a word and
 * what it is from. */
static outcome_t run_worker(const blob_t *b, const char *dir, char *reason,
                            size_t reason_n) {
  const char *worker = getenv("LLM_FUSE_VERIFY");
  if (!worker || !*worker)
    worker = "llm-fuse-verify";
  char plan[4200], cand[4200], out[4200], log[4200];
  snprintf(plan, sizeof(plan), "%s/reference/plan.json", dir);
  snprintf(cand, sizeof(cand), "%s/candidate/result.json", dir);
  snprintf(out, sizeof(out), "%s/verdict.json", dir);
  snprintf(log, sizeof(log), "%s/worker.log", dir);

  /* argv: worker --plan P --candidate C, then the blob's extra arguments,
   * one per line. */
  char args[2048] = "";
  member_text(b, "args", args, sizeof(args));
  char *argv[40];
  int argc = 0;
  argv[argc++] = (char *)worker;
  argv[argc++] = "--plan";
  argv[argc++] = plan;
  argv[argc++] = "--candidate";
  argv[argc++] = cand;
  for (char *s = args, *save = NULL, *t; argc < 39 &&
                                         (t = strtok_r(s, "\n", &save));
       s = NULL)
    argv[argc++] = t;
  argv[argc] = NULL;

  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
                                      POSIX_SPAWN_SETSIGMASK);
  pid_t pid;
  int err = posix_spawnp(&pid, worker, &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (err) {
    snprintf(reason, reason_n, "no-worker: cannot start %s: %s", worker,
             strerror(err));
    return OUT_COULD_NOT_RUN;
  }

  const char *t = getenv("LLM_FUSE_GUARD_TIMEOUT_MS");
  double limit = t && *t ? atof(t) : 300000.0;
  double t0 = now_ms();
  int status = 0;
  bool killed = false;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      break;
    if (r < 0 && errno != EINTR) {
      snprintf(reason, reason_n, "worker-error: waitpid: %s", strerror(errno));
      kill(-pid, SIGKILL);
      return OUT_COULD_NOT_RUN;
    }
    if (!killed && now_ms() - t0 > limit) {
      kill(-pid, SIGKILL); /* the whole group: the worker and its children */
      killed = true;
    }
    struct timespec nap = {0, 10 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
  if (killed) {
    snprintf(reason, reason_n, "watchdog-timeout: no verdict in %.0f ms",
             limit);
    return OUT_REJECTED;
  }
  kill(-pid, SIGKILL); /* anything the worker left behind */
  if (WIFSIGNALED(status)) {
    snprintf(reason, reason_n, "crash: the worker died of signal %d",
             WTERMSIG(status));
    return OUT_REJECTED;
  }
  int code = WEXITSTATUS(status);
  char verdict[65536], word[64];
  read_text(out, verdict, sizeof(verdict));
  json_word(verdict, "reason", word, sizeof(word));
  if (code == 0) {
    /* The exit status says accepted; so must the verdict. */
    const char *a = strstr(verdict, "\"accepted\"");
    a = a ? a + 10 : NULL;
    while (a && (*a == ' ' || *a == ':'))
      ++a;
    if (!a || strncmp(a, "true", 4)) {
      snprintf(reason, reason_n,
               "malformed-verdict: exit status 0 without an accepted verdict");
      return OUT_REJECTED;
    }
    snprintf(reason, reason_n, "verified: %s", word[0] ? word : "ok");
    return OUT_ACCEPTED;
  }
  if (code == 1) {
    snprintf(reason, reason_n, "rejected: %s", word[0] ? word : "no-verdict");
    return OUT_REJECTED;
  }
  if (code == 2 || code == 3 || code == 126 || code == 127) {
    /* Not served: no GPU, unreadable request, a worker that cannot load
     * its libraries. Nothing was learnt about the candidate. */
    snprintf(reason, reason_n, "could-not-run: %s (exit status %d)",
             word[0] ? word : "worker-error", code);
    return OUT_COULD_NOT_RUN;
  }
  snprintf(reason, reason_n, "no-verdict: the worker exited with status %d",
           code);
  return OUT_REJECTED;
}

/* ---- Deciding. ---- */

static guard_t *find_guard(const void *blob, bool create) {
  for (size_t i = 0; i < num_guards; ++i)
    if (guards[i].blob == blob)
      return &guards[i];
  if (!create || num_guards == MAX_GUARDS)
    return NULL;
  guard_t *g = &guards[num_guards++];
  g->blob = blob;
  g->state = LF_RT_GUARD_UNDECIDED;
  g->reason[0] = '\0';
  return g;
}

static void decide(guard_t *g, const void *blob, int64_t size) {
  static blob_t b; /* under `lock` */
  char why[512] = "", key[KEY_CAP] = "?", rec[4096] = "";
  bool ok = parse_blob(blob, size, &b, why, sizeof(why));
  if (ok && (!member_text(&b, "key", key, sizeof(key)) ||
             !safe_name(key, strlen(key), true) ||
             !find_member(&b, "reference/plan.json") ||
             !find_member(&b, "candidate/result.json"))) {
    snprintf(why, sizeof(why),
             "the guard blob lacks its key, plan or candidate");
    ok = false;
  }
  if (!ok) {
    g->state = LF_RT_GUARD_ROLLED_BACK;
    snprintf(g->reason, sizeof(g->reason), "bad-blob");
    fprintf(stderr, "llm-fuse guard: %s; running the original ops\n", why);
    return;
  }
  bool have_record = record_path(&b, rec, sizeof(rec));
  int32_t recorded = have_record ? record_lookup(rec, key) : 0;
  if (recorded) {
    g->state = recorded;
    snprintf(g->reason, sizeof(g->reason), "record");
    return;
  }

  char dir[4096];
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof(dir), "%s/llm-fuse-guard.XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  outcome_t out;
  char reason[REASON_CAP];
  if (!mkdtemp(dir)) {
    snprintf(reason, sizeof(reason), "could-not-run: mkdtemp %.80s: %s", dir,
             strerror(errno));
    out = OUT_COULD_NOT_RUN;
  } else {
    bool staged = true;
    for (size_t i = 0; i < b.n && staged; ++i)
      if (strncmp(b.m[i].name, "reference/", 10) == 0 ||
          strncmp(b.m[i].name, "candidate/", 10) == 0)
        staged = write_member(dir, &b.m[i]) == 0;
    if (staged) {
      out = run_worker(&b, dir, reason, sizeof(reason));
    } else {
      snprintf(reason, sizeof(reason), "could-not-run: staging in %.80s: %s",
               dir, strerror(errno));
      out = OUT_COULD_NOT_RUN;
    }
    lf_remove_tree(dir);
  }

  g->state = out == OUT_ACCEPTED ? LF_RT_GUARD_PROMOTED
                                 : LF_RT_GUARD_ROLLED_BACK;
  snprintf(g->reason, sizeof(g->reason), "%s", reason);
  if (out == OUT_COULD_NOT_RUN) {
    fprintf(stderr,
            "llm-fuse guard: %s: verification could not run (%s); running "
            "the original ops in this process, and asking again in the "
            "next\n",
            key, reason);
    return;
  }
  bool promoted = out == OUT_ACCEPTED;
  if (!quiet())
    fprintf(stderr, "llm-fuse guard: %s: %s (%s)%s%s\n", key,
            promoted ? "candidate promoted" : "rolled back to the original ops",
            reason, have_record ? "; recorded in " : "; not recorded: no path",
            have_record ? rec : "");
  if (have_record && record_append(rec, key, g->state, reason))
    fprintf(stderr,
            "llm-fuse guard: %s: cannot record the decision in %s: %s; it "
            "holds for this process only\n",
            key, rec, strerror(errno));
}

EXPORT int32_t lf_rt_guard_decide(const void *blob, int64_t size) {
  pthread_mutex_lock(&lock);
  guard_t *g = find_guard(blob, true);
  int32_t s;
  if (!g) {
    s = LF_RT_GUARD_ROLLED_BACK; /* more guards than slots: stay safe */
  } else {
    if (g->state == LF_RT_GUARD_UNDECIDED)
      decide(g, blob, size);
    s = g->state;
  }
  pthread_mutex_unlock(&lock);
  return s;
}

EXPORT int32_t lf_rt_guard_state(const void *blob, int64_t size) {
  (void)size;
  pthread_mutex_lock(&lock);
  guard_t *g = find_guard(blob, false);
  int32_t s = g ? g->state : LF_RT_GUARD_UNDECIDED;
  pthread_mutex_unlock(&lock);
  return s;
}

EXPORT const char *lf_rt_guard_reason(const void *blob, int64_t size) {
  (void)size;
  pthread_mutex_lock(&lock);
  guard_t *g = find_guard(blob, false);
  const char *r = g && g->state ? g->reason : NULL;
  pthread_mutex_unlock(&lock);
  return r;
}
