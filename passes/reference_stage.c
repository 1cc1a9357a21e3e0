/* reference_stage.c - writing a reference lowering to a folder, the form
 * the verification worker reads: plan.json, and per kernel its MLIR, PTX
 * and (with ptxas) cubin; the opmath truth of a subgraph that accumulates
 * in 16 bits the same way in truth/, the wide plan of a subgraph with an
 * f16 result in wide/. Shared by llm-fuse-reference, the
 * llm-fuse pass and deferred verification.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/log.h"
#include "builder/builder.h"
#include "passes/reference.h"

static lf_status_t write_named(const char *dir, const char *name,
                               const void *data, size_t len) {
  char path[4096];
  if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "path too long: %s/%s", dir,
                     name);
  return lf_write_file_atomic(path, data, len);
}

/* One plan and its kernels into `dir`; adds the build time to *ms. */
static lf_status_t stage_one(const lf_reference_t *ref, const char *chip,
                             const char *dir, bool build,
                             double *out_build_ms) {
  LF_RETURN_IF_ERROR(lf_make_dirs(dir));
  char *plan = lf_reference_plan_json(ref);
  if (!plan)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  lf_status_t st = write_named(dir, "plan.json", plan, strlen(plan));
  free(plan);
  for (size_t k = 0; k < ref->num_kernels && !st; ++k) {
    const lf_ref_kernel_t *kern = &ref->kernels[k];
    char name[300];
    snprintf(name, sizeof(name), "%s.mlir", kern->name);
    st = write_named(dir, name, kern->module, strlen(kern->module));
    if (st || !build)
      continue;
    /* Our own text from the upstream pipeline: trusted, built here. */
    lf_build_request_t req = {0};
    req.kernel_text = kern->module;
    req.kernel_size = strlen(kern->module);
    req.trusted = true;
    req.chip = chip;
    lf_build_result_t *res = NULL;
    st = lf_build_kernel_in_process(&req, &res);
    if (st)
      break;
    if (out_build_ms)
      *out_build_ms += res->ms_total;
    if (res->kind != LF_BUILD_OK) {
      st = LF_STATUS(LF_STATUS_INTERNAL,
                     "reference kernel %s of %s did not build (%s): %s",
                     kern->name, ref->subgraph, lf_build_kind_name(res->kind),
                     res->message);
    } else {
      snprintf(name, sizeof(name), "%s.ptx", kern->name);
      st = write_named(dir, name, res->ptx, res->ptx_size);
      if (!st && res->cubin) {
        snprintf(name, sizeof(name), "%s.cubin", kern->name);
        st = write_named(dir, name, res->cubin, res->cubin_size);
      }
    }
    lf_build_result_destroy(res);
  }
  return st;
}

lf_status_t lf_reference_stage(const lf_reference_t *ref, const char *chip,
                               const char *dir, bool build,
                               double *out_build_ms) {
  double ms = 0;
  if (out_build_ms)
    *out_build_ms = 0;
  char truth_dir[4096];
  if ((size_t)snprintf(truth_dir, sizeof(truth_dir), "%s/%s", dir,
                       LF_REFERENCE_TRUTH_DIR) >= sizeof(truth_dir))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "path too long: %s", dir);
  /* The plan names its truth only once the truth is staged; a truth that
   * does not stage leaves the upstream plan to judge, with a note. */
  lf_reference_t plan = *ref; /* a shallow view: owns nothing */
  char note[1400];
  lf_remove_tree(truth_dir); /* never a stale truth from an earlier run */
  if (ref->truth) {
    lf_status_t st = stage_one(ref->truth, chip, truth_dir, build, &ms);
    if (st && lf_status_code(st) == LF_STATUS_RESOURCE_EXHAUSTED)
      return st;
    if (st) {
      snprintf(note, sizeof(note), "no opmath reference: it did not stage: %s",
               lf_status_message(st));
      lf_status_free(st);
      lf_remove_tree(truth_dir);
      plan.truth = NULL;
      plan.truth_note = note;
    }
  }
  /* The same for the wide plan (a subgraph with an f16 result). */
  char wide_dir[4096], wide_note[1400];
  if ((size_t)snprintf(wide_dir, sizeof(wide_dir), "%s/%s", dir,
                       LF_REFERENCE_WIDE_DIR) >= sizeof(wide_dir))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "path too long: %s", dir);
  lf_remove_tree(wide_dir); /* never a stale wide plan */
  if (ref->wide) {
    lf_status_t st = stage_one(ref->wide, chip, wide_dir, build, &ms);
    if (st && lf_status_code(st) == LF_STATUS_RESOURCE_EXHAUSTED)
      return st;
    if (st) {
      snprintf(wide_note, sizeof(wide_note),
               "no wide reference: it did not stage: %s",
               lf_status_message(st));
      lf_status_free(st);
      lf_remove_tree(wide_dir);
      plan.wide = NULL;
      plan.wide_note = wide_note;
    }
  }
  if (plan.wide)
    LF_LOG_INFO("%s: f16 overflow-boundary elements judged against the "
                "unrounded (%s) reference in %s/%s",
                ref->subgraph, LF_REFERENCE_WIDE_KIND, dir,
                LF_REFERENCE_WIDE_DIR);
  else if (plan.wide_note)
    LF_LOG_INFO("%s: %s", ref->subgraph, plan.wide_note);
  if (plan.truth)
    LF_LOG_INFO("%s: values judged against the %s reference in %s/%s: %s",
                ref->subgraph, LF_REFERENCE_OPMATH_KIND, dir,
                LF_REFERENCE_TRUTH_DIR,
                plan.truth->truth_reason ? plan.truth->truth_reason : "");
  else if (plan.truth_note)
    LF_LOG_INFO("%s: %s; the upstream reference judges", ref->subgraph,
                plan.truth_note);
  lf_status_t st = stage_one(&plan, chip, dir, build, &ms);
  if (out_build_ms)
    *out_build_ms = ms;
  return st;
}
