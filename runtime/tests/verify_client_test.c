/* verify_client_test.c - the client against a fake worker: verdicts pass
 * through; hangs, crashes, silence, garbage and lies are rejections; the
 * watchdog kills the whole process group. No GPU. */
#include "runtime/verify_client.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/testing.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static lf_verdict_t run_mode(const char *mode, double floor_ms,
                             double *out_ms) {
  setenv("FAKE_WORKER_MODE", mode, 1);
  lf_verify_request_t r;
  lf_verify_request_init(&r);
  r.worker = FAKE_WORKER;
  r.plan_path = "plan.json";
  r.candidate_path = "result.json";
  r.floor_ms = floor_ms;
  r.reference_factor = 10;
  lf_verdict_t v;
  double t0 = now_ms();
  lf_status_t s = lf_verify_candidate(&r, &v);
  if (out_ms)
    *out_ms = now_ms() - t0;
  LF_EXPECT(s == LF_OK);
  lf_status_free(s);
  return v;
}

LF_TEST(accepted_verdict_passes_through) {
  lf_verdict_t v = run_mode("accept", 10000, NULL);
  LF_EXPECT(v.accepted);
  LF_EXPECT_STREQ(v.reason, "ok");
  LF_EXPECT(v.trials == 5);
  LF_EXPECT(v.speedup == 4 && v.candidate_ms == 1.5 && v.reference_ms == 6);
  LF_EXPECT(v.json && strstr(v.json, "llm-fuse-verdict/0"));
  lf_verdict_free(&v);
}

LF_TEST(rejected_verdict_passes_through) {
  lf_verdict_t v = run_mode("reject", 10000, NULL);
  LF_EXPECT(!v.accepted);
  LF_EXPECT_STREQ(v.reason, "mismatch");
  lf_verdict_free(&v);
}

LF_TEST(hang_is_killed_with_its_group) {
  char pidfile[] = "/tmp/lf_fake_worker_XXXXXX";
  int fd = mkstemp(pidfile);
  LF_EXPECT(fd >= 0);
  close(fd);
  setenv("FAKE_WORKER_PIDFILE", pidfile, 1);
  double ms;
  lf_verdict_t v = run_mode("hang", 300, &ms);
  unsetenv("FAKE_WORKER_PIDFILE");
  LF_EXPECT(!v.accepted);
  LF_EXPECT_STREQ(v.reason, "watchdog-timeout");
  LF_EXPECT(strstr(v.message, "killed with its process group") != NULL);
  LF_EXPECT(ms >= 300 && ms < 3000);
  /* the worker's own child was killed too */
  FILE *f = fopen(pidfile, "r");
  int child = 0;
  LF_EXPECT(f && fscanf(f, "%d", &child) == 1);
  if (f)
    fclose(f);
  unlink(pidfile);
  if (child > 0) {
    int gone = 0;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = kill(child, 0) != 0 && errno == ESRCH;
      char path[64], state = 0;
      snprintf(path, sizeof(path), "/proc/%d/stat", child);
      FILE *st = fopen(path, "r");
      if (st) { /* killed but not yet reaped by init is gone too */
        if (fscanf(st, "%*d (%*[^)]) %c", &state) == 1 && state == 'Z')
          gone = 1;
        fclose(st);
      }
      if (!gone)
        usleep(10000);
    }
    LF_EXPECT(gone);
  }
  /* the verdict is well-formed JSON in the schema */
  lf_verdict_t again;
  LF_EXPECT(lf_verdict_parse(v.json, strlen(v.json), &again) == LF_OK);
  LF_EXPECT_STREQ(again.reason, "watchdog-timeout");
  lf_verdict_free(&again);
  lf_verdict_free(&v);
}

LF_TEST(limit_grows_with_reference_time) {
  /* floor 200 ms + 10 x 50 ms = 700 ms */
  double ms;
  lf_verdict_t v = run_mode("slow-ref", 200, &ms);
  LF_EXPECT_STREQ(v.reason, "watchdog-timeout");
  LF_EXPECT(ms >= 650 && ms < 4000);
  LF_EXPECT(strstr(v.message, "limit of 700 ms") != NULL);
  lf_verdict_free(&v);
}

LF_TEST(crash_is_a_rejection) {
  lf_verdict_t v = run_mode("crash", 10000, NULL);
  LF_EXPECT(!v.accepted);
  LF_EXPECT_STREQ(v.reason, "crash");
  LF_EXPECT(strstr(v.message, "signal 11") != NULL);
  LF_EXPECT(strstr(v.message, "about to crash") != NULL);
  lf_verdict_free(&v);
}

LF_TEST(no_or_bad_verdict_is_a_rejection) {
  lf_verdict_t v = run_mode("silent", 10000, NULL);
  LF_EXPECT_STREQ(v.reason, "no-verdict");
  LF_EXPECT(!v.accepted);
  lf_verdict_free(&v);
  v = run_mode("garbage", 10000, NULL);
  LF_EXPECT_STREQ(v.reason, "malformed-verdict");
  LF_EXPECT(strstr(v.message, "not JSON") != NULL);
  lf_verdict_free(&v);
  v = run_mode("liar", 10000, NULL);
  LF_EXPECT_STREQ(v.reason, "malformed-verdict");
  LF_EXPECT(!v.accepted);
  lf_verdict_free(&v);
  v = run_mode("few-trials", 10000, NULL);
  LF_EXPECT_STREQ(v.reason, "malformed-verdict");
  LF_EXPECT(strstr(v.message, "at least 5 trials") != NULL);
  lf_verdict_free(&v);
}

LF_TEST(printed_rejection_survives_a_hang_on_exit) {
  lf_verdict_t v = run_mode("reject-then-hang", 300, NULL);
  LF_EXPECT(!v.accepted);
  LF_EXPECT_STREQ(v.reason, "timeout");
  lf_verdict_free(&v);
}

LF_TEST(missing_worker_is_a_rejection) {
  lf_verify_request_t r;
  lf_verify_request_init(&r);
  r.worker = "/nonexistent/llm-fuse-verify";
  r.plan_path = "p";
  r.candidate_path = "c";
  lf_verdict_t v;
  LF_EXPECT(lf_verify_candidate(&r, &v) == LF_OK);
  LF_EXPECT(!v.accepted);
  LF_EXPECT_STREQ(v.reason, "no-worker");
  lf_verdict_free(&v);
  r.plan_path = NULL;
  lf_status_t s = lf_verify_candidate(&r, &v);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  lf_status_free(s);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  LF_RUN(accepted_verdict_passes_through);
  LF_RUN(rejected_verdict_passes_through);
  LF_RUN(hang_is_killed_with_its_group);
  LF_RUN(limit_grows_with_reference_time);
  LF_RUN(crash_is_a_rejection);
  LF_RUN(no_or_bad_verdict_is_a_rejection);
  LF_RUN(printed_rejection_survives_a_hang_on_exit);
  LF_RUN(missing_worker_is_a_rejection);
  return lf_test_finish();
}
