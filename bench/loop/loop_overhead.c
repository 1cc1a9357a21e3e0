/* loop_overhead.c - CPU-side cost of one round of the closed loop (issue
 * 14): lf_acquire_run() against the scripted loopback model
 * (llm_client/tests/kernel_server.py, no delay), with a build callback and
 * an evaluate callback that return at once, so what is measured is the
 * loop itself: prompt and conversation building, the HTTP round trip on
 * loopback, reply extraction, variant expansion, bookkeeping, refinement
 * prompts. Building and GPU verification are measured elsewhere
 * (bench/build_bench.py, bench/loop/run-device.sh).
 *
 *   lf_loop_overhead [REPEATS]
 * Prints one table row per configuration: subgraphs, refinement rounds,
 * loop threads, requests, the best wall time of REPEATS runs, and wall time
 * per request (one loop round; with several threads, amortized).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "llm_client/acquire.h"
#include "llm_client/tests/loopback_server.h"

static lf_status_t quick_build(const lf_acquire_task_t *task,
                               const char *kernel, size_t line_offset,
                               void *user, lf_acquire_build_t *out) {
  (void)task, (void)line_offset, (void)user;
  out->ok = true;
  out->artifact = strdup(kernel);
  return LF_OK;
}

/* Verified at 5 ms against a 10 ms fallback and a 1 ms floor: never within
 * 10% of the roofline, so every refinement round is asked for. */
static lf_status_t quick_eval(const lf_acquire_task_t *task, void *artifact,
                              void *user, lf_acquire_eval_t *out) {
  (void)task, (void)user, (void)artifact;
  out->accepted = true;
  out->reason = strdup("ok");
  out->time_ms = 5;
  out->fallback_ms = 10;
  out->roofline_ms = 1;
  out->roofline_basis = strdup("1 MB at 1000 GB/s");
  return LF_OK;
}

static void release(void *a, void *u) {
  (void)u;
  free(a);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  int repeats = argc > 1 ? atoi(argv[1]) : 3;
  lf_log_set_level(LF_LOG_ERROR);
  char dir[] = "/tmp/lf_loop_overhead_XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  char cfg[256], log[256];
  snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
  snprintf(log, sizeof(log), "%s/log.jsonl", dir);
  FILE *f = fopen(cfg, "w");
  if (!f)
    return 1;
  fputs("{\"rules\":[{\"match\":\"*\",\"replies\":[\"ms:5\"],"
        "\"usage\":[3000,1500]}]}",
        f);
  fclose(f);
  lf_test_server_t server = {.pid = -1, .stdin_fd = -1};
  char *sargv[] = {LF_PYTHON3, LF_KERNEL_SERVER, cfg, log, NULL};
  if (!lf_test_server_start(&server, sargv)) {
    fprintf(stderr, "cannot start the scripted server\n");
    return 1;
  }
  enum { N = 16 };
  char names[N][32], fps[N][65];
  lf_acquire_task_t tasks[N];
  for (size_t i = 0; i < N; ++i) {
    snprintf(fps[i], sizeof(fps[i]), "%016zx%048d", 0xb0b0b0b0b0b0b0b0 + i, 0);
    snprintf(names[i], sizeof(names[i]), "sg_%.16s", fps[i]);
    tasks[i] = (lf_acquire_task_t){
        .name = names[i],
        .fingerprint = fps[i],
        .klass = "reduction",
        .ir = "func.func private @f(%a: tensor<4096x4096xf32>) -> "
              "tensor<4096x4096xf32> {\n  return %a : tensor<4096x4096xf32>\n}\n",
        .signature = "(tensor<4096x4096xf32>) -> tensor<4096x4096xf32>",
        .arch = "sm_90"};
  }
  printf("%-10s %-12s %-12s %-10s %10s %14s\n", "subgraphs", "refinements",
         "concurrency", "requests", "wall ms", "ms per round");
  const int configs[][3] = {
      {1, 0, 1}, {1, 2, 1}, {1, 8, 1}, {16, 2, 1}, {16, 2, 8}};
  for (size_t c = 0; c < sizeof(configs) / sizeof(configs[0]); ++c) {
    double best = 1e30;
    long requests = 0;
    for (int r = 0; r < repeats; ++r) {
      lf_acquire_options_t o;
      lf_acquire_options_init(&o);
      o.provider = LF_PROVIDER_OPENAI;
      o.client.base_url = server.base_url;
      o.model = "scripted";
      o.build = quick_build;
      o.evaluate = quick_eval;
      o.release = release;
      o.max_refinements = configs[c][1];
      o.max_concurrency = configs[c][2];
      o.build_concurrency = configs[c][2];
      lf_acquire_report_t *rep = NULL;
      double t0 = now_ms();
      lf_status_t s = lf_acquire_run(tasks, (size_t)configs[c][0], &o, &rep);
      double ms = now_ms() - t0;
      if (s) {
        fprintf(stderr, "acquire: %s\n", lf_status_message(s));
        lf_status_free(s);
        return 1;
      }
      requests = rep->requests;
      lf_acquire_report_destroy(rep);
      if (ms < best)
        best = ms;
    }
    printf("%-10d %-12d %-12d %-10ld %10.1f %14.2f\n", configs[c][0],
           configs[c][1], configs[c][2], requests, best,
           best / (double)requests);
  }
  lf_test_server_stop(&server);
  unlink(cfg);
  unlink(log);
  rmdir(dir);
  return 0;
}
