/* llm-fuse-verify - the verification worker.
 *
 *   llm-fuse-verify --plan REF/plan.json --candidate CAND/result.json
 *       [--seed N] [--trials N] [--atomics] [--lenient-nonfinite] [--no-timing]
 * [--flops X]
 *       [--min-speedup X] [--launch-floor-ms X] [--launch-factor X]
 *       [--timing-budget-ms X] [--progress-fd N] [--device N]
 *       [--out FILE] [--pretty] [--isolated [--watchdog-floor-ms X]]
 *       [--upstream-reference] [--no-wide-reference] [--tf32-k K]
 *
 * Runs the protocol of docs/verification.md on one candidate and prints
 * its verdict (schema llm-fuse-verdict/0) on stdout, or into FILE. Exit
 * status: 0 accepted, 1 rejected, 2 the request could not be served (no
 * GPU, unreadable plan; the verdict then says so, with accepted false).
 * The compiler runs it through lf_verify_candidate() (runtime/
 * verify_client.h) under a watchdog; --isolated does the same from the
 * command line (this binary re-run as the child, through the client, its
 * verdict printed), as scripts/verify-corpus.sh does. A plan that names an
 * opmath truth (truth/plan.json: a subgraph that accumulates in bf16/f16)
 * has the values judged by the truth and the time by the plan;
 * --upstream-reference judges by the plan itself. A plan that names a wide
 * reference (wide/plan.json: a subgraph with an f16 result) has elements
 * where one side overflowed judged by its unrounded value
 * (docs/verification.md, "The f16 overflow boundary");
 * --no-wide-reference ignores it. --tf32-k K (TF32 mode,
 * pass option tf32=1) judges f32 outputs with the TF32 tolerance for
 * reductions of K terms (docs/verification.md, "TF32 mode"). Links no MLIR: it
 * runs on a GPU machine with only the CUDA driver, libcjson and libc.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/fs.h"
#include "runtime/verify_client.h"
#include "runtime/verify_protocol.h"
#include "runtime/verify_worker.h"

static int usage(const char *why) {
  fprintf(stderr,
          "llm-fuse-verify: %s\n"
          "usage: llm-fuse-verify --plan REF/plan.json --candidate "
          "CAND/result.json [--seed N] [--trials N] [--atomics] "
          "[--lenient-nonfinite] [--no-timing] [--flops X] [--min-speedup X] "
          "[--launch-floor-ms "
          "X] [--launch-factor X] [--timing-budget-ms X] [--progress-fd N] "
          "[--device N] [--out FILE] [--pretty] [--upstream-reference] "
          "[--no-wide-reference] [--tf32-k K]\n",
          why);
  return 2;
}

static int number(const char *text, double *out) {
  char *end;
  errno = 0;
  *out = strtod(text, &end);
  return !errno && end != text && !*end;
}

static int emit(cJSON *verdict, const char *out_path, int pretty) {
  char *text = pretty ? cJSON_Print(verdict) : cJSON_PrintUnformatted(verdict);
  if (!text)
    return 0;
  int ok = 1;
  if (out_path) {
    lf_status_t s = lf_write_file_atomic(out_path, text, strlen(text));
    if (s) {
      char m[512];
      fprintf(stderr, "llm-fuse-verify: %s\n",
              lf_status_format(s, m, sizeof(m)));
      lf_status_free(s);
      ok = 0;
    }
  } else {
    ok = printf("%s\n", text) > 0 && fflush(stdout) == 0;
  }
  free(text);
  return ok;
}

/* Runs this binary as the worker through lf_verify_candidate(). */
static int run_isolated(const lf_verify_worker_options_t *opt, const char *self,
                        double floor_ms, const char *out_path, int pretty) {
  char lf[32], lx[32], tb[32], dev[16], tk[32];
  snprintf(tk, sizeof(tk), "%lld", (long long)opt->tf32_k);
  snprintf(lf, sizeof(lf), "%.17g", opt->launch_floor_ms);
  snprintf(lx, sizeof(lx), "%.17g", opt->launch_factor);
  snprintf(tb, sizeof(tb), "%.17g", opt->timing_budget_ms);
  snprintf(dev, sizeof(dev), "%d", opt->device);
  const char *extra[13] = {"--launch-floor-ms",
                           lf,
                           "--launch-factor",
                           lx,
                           "--timing-budget-ms",
                           tb,
                           "--device",
                           dev,
                           opt->upstream_reference ? "--upstream-reference"
                                                   : NULL,
                           NULL,
                           NULL,
                           NULL,
                           NULL};
  /* --no-wide-reference and --tf32-k after the optional
   * --upstream-reference, without a hole. */
  size_t ne = opt->upstream_reference ? 9 : 8;
  if (opt->no_wide_reference)
    extra[ne++] = "--no-wide-reference";
  if (opt->tf32_k > 0) {
    extra[ne] = "--tf32-k";
    extra[ne + 1] = tk;
  }
  lf_verify_request_t r;
  lf_verify_request_init(&r);
  char worker[4096];
  ssize_t len = readlink("/proc/self/exe", worker, sizeof(worker) - 1);
  if (len > 0)
    worker[len] = 0;
  else if (!realpath(self, worker))
    snprintf(worker, sizeof(worker), "%s", self);
  r.worker = worker;
  r.plan_path = opt->plan_path;
  r.candidate_path = opt->candidate_path;
  r.seed = opt->seed;
  r.trials = opt->trials;
  r.atomics = opt->atomics;
  r.lenient_nonfinite = opt->lenient_nonfinite;
  r.timing = opt->timing;
  r.flops = opt->flops;
  r.min_speedup = opt->min_speedup;
  r.floor_ms = floor_ms;
  r.extra_args = extra;
  lf_verdict_t v;
  lf_status_t s = lf_verify_candidate(&r, &v);
  if (s) {
    char m[512];
    fprintf(stderr, "llm-fuse-verify: %s\n", lf_status_format(s, m, sizeof(m)));
    lf_status_free(s);
    return 2;
  }
  cJSON *root = cJSON_Parse(v.json);
  int ok = root && emit(root, out_path, pretty);
  cJSON_Delete(root);
  int accepted = v.accepted;
  lf_verdict_free(&v);
  return !ok ? 2 : accepted ? 0 : 1;
}

int main(int argc, char **argv) {
  lf_verify_worker_options_t opt;
  lf_verify_worker_options_init(&opt);
  const char *out_path = NULL;
  int pretty = 0, isolated = 0;
  double watchdog_floor_ms = 60000;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    double d;
    if (!strcmp(a, "--atomics")) {
      opt.atomics = true;
    } else if (!strcmp(a, "--upstream-reference")) {
      opt.upstream_reference = true;
    } else if (!strcmp(a, "--no-wide-reference")) {
      opt.no_wide_reference = true;
    } else if (!strcmp(a, "--lenient-nonfinite")) {
      opt.lenient_nonfinite = true;
    } else if (!strcmp(a, "--no-timing")) {
      opt.timing = false;
    } else if (!strcmp(a, "--pretty")) {
      pretty = 1;
    } else if (!strcmp(a, "--isolated")) {
      isolated = 1;
    } else if (!v) {
      return usage("missing value or unknown option");
    } else if (!strcmp(a, "--plan")) {
      opt.plan_path = v, ++i;
    } else if (!strcmp(a, "--candidate")) {
      opt.candidate_path = v, ++i;
    } else if (!strcmp(a, "--out")) {
      out_path = v, ++i;
    } else if (!number(v, &d) || d < 0) {
      fprintf(stderr, "llm-fuse-verify: bad value '%s' for %s\n", v, a);
      return 2;
    } else if (!strcmp(a, "--seed")) {
      opt.seed = strtoull(v, NULL, 0), ++i;
    } else if (!strcmp(a, "--trials")) {
      opt.trials = (int)d, ++i;
    } else if (!strcmp(a, "--flops")) {
      opt.flops = d, ++i;
    } else if (!strcmp(a, "--min-speedup")) {
      opt.min_speedup = d, ++i;
    } else if (!strcmp(a, "--launch-floor-ms")) {
      opt.launch_floor_ms = d, ++i;
    } else if (!strcmp(a, "--launch-factor")) {
      opt.launch_factor = d, ++i;
    } else if (!strcmp(a, "--timing-budget-ms")) {
      opt.timing_budget_ms = d, ++i;
    } else if (!strcmp(a, "--progress-fd")) {
      opt.progress_fd = (int)d, ++i;
    } else if (!strcmp(a, "--watchdog-floor-ms")) {
      watchdog_floor_ms = d, ++i;
    } else if (!strcmp(a, "--device")) {
      opt.device = (int)d, ++i;
    } else if (!strcmp(a, "--tf32-k")) {
      if (d < 1 || d > 9.0e15 || d != (double)(int64_t)d) {
        fprintf(stderr, "llm-fuse-verify: bad value '%s' for --tf32-k (the "
                        "reduction length, a positive integer)\n", v);
        return 2;
      }
      opt.tf32_k = (int64_t)d, ++i;
    } else {
      fprintf(stderr, "llm-fuse-verify: unknown option %s\n", a);
      return 2;
    }
  }
  if (!opt.plan_path || !opt.candidate_path)
    return usage("--plan and --candidate are required");
  if (isolated)
    return run_isolated(&opt, argv[0], watchdog_floor_ms, out_path, pretty);

  cJSON *verdict = NULL;
  bool sticky = false;
  lf_status_t s = lf_verify_worker_run(&opt, &verdict, &sticky);
  if (s) {
    /* not the candidate's fault, but nothing is verified: a rejection */
    char m[1024];
    lf_status_format(s, m, sizeof(m));
    fprintf(stderr, "llm-fuse-verify: %s\n", m);
    lf_status_code_t code = lf_status_code(s);
    lf_status_free(s);
    lf_verdict_t v;
    const char *reason =
        code == LF_STATUS_UNAVAILABLE ? "no-device"
        : code == LF_STATUS_INVALID_ARGUMENT || code == LF_STATUS_NOT_FOUND
            ? "bad-request"
            : "worker-error";
    if (lf_verdict_reject(reason, m, &v))
      _exit(2);
    int ok = out_path ? !lf_write_file_atomic(out_path, v.json, strlen(v.json))
                      : printf("%s\n", v.json) > 0 && !fflush(stdout);
    lf_verdict_free(&v);
    if (sticky)
      _exit(ok ? 2 : 3);
    return 2;
  }
  int accepted =
      cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(verdict, "accepted"));
  int ok = emit(verdict, out_path, pretty);
  cJSON_Delete(verdict);
  if (!ok)
    return 2;
  if (sticky) /* a kernel may still run: leave without touching CUDA */
    _exit(accepted ? 0 : 1);
  return accepted ? 0 : 1;
}
