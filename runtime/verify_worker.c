/* verify_worker.c - the verification protocol on the GPU.
 *
 * One worker verifies one candidate against one reference plan, all on one
 * stream: draw inputs, checksum them, run the reference, summarize its
 * outputs (redrawing degenerate set-ups), poison the candidate's outputs
 * (NaN, then a finite sentinel) inside red zones, launch the candidate
 * twice under a deadline, checksum the inputs again, check the red zones,
 * compare (NaN-aware, per-dtype tolerance) and compare the two runs bit for
 * bit; then time both with CUDA events and an L2 flush. The GPU helper
 * kernels are verify_kernels.c, embedded as PTX (and as an sm_90 cubin
 * when ptxas was found at build time).
 */
#include "runtime/verify_worker.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/fs.h"
#include "base/strbuf.h"
#include "runtime/cuda_driver.h"
#include "runtime/tensor_map.h"
#include "runtime/verify_protocol.h"
#include "verify_kernels_embed.h"

#define RED_ZONE 65536 /* bytes of 0xCD before and after each output */
#define RED_BYTE 0xCD
#define MAX_TEMPS 64
#define MAX_KERNELS 64
#define MAX_ARGS 64

typedef struct ref_kernel_s {
  char name[64];
  CUmodule module;
  CUfunction function;
} ref_kernel_t;

typedef struct arg_s {
  int kind; /* 0 input, 1 output, 2 temp, 3 value */
  size_t index;
  unsigned char value[8];
} arg_t;

typedef struct step_s {
  bool is_copy;
  size_t kernel;
  unsigned grid[3], block[3];
  arg_t args[MAX_ARGS];
  size_t num_args;
} step_t;

/* A reference plan on the device: the upstream lowering (run for the
 * expected values and timed), or the opmath truth (only for values). */
typedef struct ref_plan_s {
  ref_kernel_t kernels[MAX_KERNELS];
  size_t num_kernels;
  step_t *steps;
  size_t num_steps;
  CUdeviceptr temps[MAX_TEMPS];
  size_t temp_bytes[MAX_TEMPS];
  size_t num_temps;
  bool wide; /* the wide plan: its widened results are f32 buffers */
} ref_plan_t;

/* Per-output and per-input scratch, read back in one copy. */
typedef struct scratch_s {
  lf_vstats_t stats;
  lf_vcompare_t cmp[2];
  uint64_t red[2];
  uint64_t sum_before, sum_after; /* for inputs */
} scratch_t;

typedef struct worker_s {
  const lf_verify_worker_options_t *opt;
  lf_cuda_driver_t *drv;
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  bool sticky;
  /* device */
  char device_name[256];
  int cc_major, cc_minor, sms, clock_khz, l2_bytes, smem_optin;
  /* helpers */
  CUmodule helpers;
  CUfunction f_fill, f_special, f_checksum, f_count_not, f_stats, f_compare,
      f_square;
  /* subgraph */
  char *signature, *subgraph;
  lf_voperand_t *ins, *outs;
  size_t nin, nout;
  /* reference plans: the upstream one (timed) and, for a subgraph that
   * accumulates in 16 bits, the opmath truth the values are judged by */
  ref_plan_t ref, truth;
  /* for a subgraph with an f16 result, the wide plan: its 16-bit float
   * results unrounded (f32), for elements at the overflow boundary */
  ref_plan_t wide;
  lf_vjudge_t judge;
  /* candidate */
  char kernel_name[160];
  CUmodule cmod;
  CUfunction cfn;
  unsigned grid[3], block[3], smem;
  int cparam_kind[MAX_ARGS]; /* 0 input, 1 output, 2 tensor map */
  size_t cparam_index[MAX_ARGS]; /* a tensor map: index into maps */
  size_t num_cparams;
  /* The candidate's tensor maps (docs/kernel-contract.md, "Tensor maps"),
   * re-encoded whenever the buffer they view moves (each run of a trial
   * has its own poisoned output copy). */
  lf_tensor_map_spec_t map_spec[MAX_ARGS];
  CUdeviceptr map_base[MAX_ARGS]; /* 0: not encoded yet */
  _Alignas(64) unsigned char map_bytes[MAX_ARGS][LF_TENSOR_MAP_BYTES];
  size_t num_maps;
  int map_encodes; /* how many encodes ran, for the verdict */
  bool atomics;
  /* buffers */
  CUdeviceptr *in, *ref_out, *arena[2], *cand[2];
  CUdeviceptr *up_out; /* the upstream plan's outputs when a truth judges */
  CUdeviceptr *wide_out;   /* the wide plan's outputs (f32 where widened) */
  uint64_t boundary_total; /* elements passed by the overflow-boundary rule */
  uint64_t acc32_total;    /* elements passed by the f32-accumulation bound */
  unsigned char (*scalar)[8];
  /* TF32 mode (--tf32-k) and 16-bit contractions summed in f32 (the
   * plan's "acc32"): the inputs squared (float buffers; the others alias
   * `in`) and a reference plan's outputs on them (scale_plan()), the
   * per-element error scale sum (a_k b_k)^2 of lf_compare
   * (docs/verification.md, "TF32 mode", "16-bit contractions accumulated in
   * f32") */
  CUdeviceptr *sq_in, *scale_out;
  unsigned char (*sq_scalar)[8];
  CUdeviceptr scratch;
  scratch_t *host_scratch;
  size_t num_scratch;
  CUdeviceptr flush;
  size_t flush_bytes;
  double ref_ms_estimate;
  bool progress_sent;
} worker_t;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#define CU(call)                                                               \
  lf_cuda_result_to_status(w->drv, w->drv->call, #call, __FILE__, __LINE__)
#define CU_TRY(call) LF_RETURN_IF_ERROR(CU(call))

/* ---- Reading the plan and the candidate -------------------------------- */

/* Reads and parses a JSON file; `text` (may be NULL) keeps its text. */
static lf_status_t read_json(const char *path, cJSON **out, lf_strbuf_t *text) {
  lf_strbuf_t buf;
  lf_strbuf_init(&buf, 64u << 20);
  lf_status_t s = lf_read_file(path, &buf);
  if (s) {
    lf_strbuf_free(&buf);
    return lf_status_annotate(s, "reading %s", path);
  }
  *out = cJSON_ParseWithLength(buf.data ? buf.data : "", buf.len);
  if (text)
    *text = buf;
  else
    lf_strbuf_free(&buf);
  if (!*out)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "%s is not valid JSON", path);
  return LF_OK;
}

static lf_status_t read_binary(const char *dir, const char *stem,
                               lf_strbuf_t *out, char *which, size_t which_n) {
  static const char *exts[] = {".cubin", ".ptx"};
  for (int i = 0; i < 2; ++i) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s%s", dir, stem, exts[i]);
    if (access(path, R_OK))
      continue;
    snprintf(which, which_n, "%s", path);
    LF_RETURN_IF_ERROR(lf_read_file(path, out));
    if (i == 1) /* PTX is text: the driver wants it NUL-terminated */
      LF_RETURN_IF_ERROR(lf_strbuf_append(out, "", 1));
    return LF_OK;
  }
  return LF_STATUS(LF_STATUS_NOT_FOUND, "no %s/%s.cubin or .ptx", dir, stem);
}

static lf_status_t put_value(const cJSON *a, const char *type, arg_t *arg) {
  arg->kind = 3;
  memset(arg->value, 0, 8);
  const cJSON *bits = cJSON_GetObjectItemCaseSensitive(a, "bits");
  const cJSON *value = cJSON_GetObjectItemCaseSensitive(a, "value");
  if (cJSON_IsString(bits)) {
    unsigned long long b = strtoull(bits->valuestring, NULL, 16);
    if (!strcmp(type, "f32")) {
      uint32_t u = (uint32_t)b;
      memcpy(arg->value, &u, 4);
    } else {
      memcpy(arg->value, &b, 8);
    }
    return LF_OK;
  }
  if (!cJSON_IsNumber(value))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "plan argument without a value");
  if (!strcmp(type, "i32") || !strcmp(type, "i16") || !strcmp(type, "i8") ||
      !strcmp(type, "i1")) {
    int32_t v = (int32_t)value->valuedouble;
    memcpy(arg->value, &v, 4);
  } else if (!strcmp(type, "f32")) {
    float f = (float)value->valuedouble;
    memcpy(arg->value, &f, 4);
  } else if (!strcmp(type, "f64")) {
    double d = value->valuedouble;
    memcpy(arg->value, &d, 8);
  } else {
    int64_t v = (int64_t)value->valuedouble;
    memcpy(arg->value, &v, 8);
  }
  return LF_OK;
}

/* Loads a plan into `p`. The primary (upstream) plan also sets the
 * subgraph's operands; a truth plan must have the same (checked before by
 * lf_vjudge_check_truth). */
static lf_status_t load_plan(worker_t *w, ref_plan_t *p, const cJSON *plan,
                             const char *dir, bool primary) {
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(plan, "schema");
  const cJSON *sig = cJSON_GetObjectItemCaseSensitive(plan, "signature");
  const cJSON *sg = cJSON_GetObjectItemCaseSensitive(plan, "subgraph");
  const cJSON *temps = cJSON_GetObjectItemCaseSensitive(plan, "temps");
  const cJSON *kernels = cJSON_GetObjectItemCaseSensitive(plan, "kernels");
  const cJSON *steps = cJSON_GetObjectItemCaseSensitive(plan, "steps");
  if (!cJSON_IsString(schema) ||
      strcmp(schema->valuestring, "llm-fuse-reference/0") ||
      !cJSON_IsString(sig) || !cJSON_IsArray(temps) ||
      !cJSON_IsArray(kernels) || !cJSON_IsArray(steps))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "%s/plan.json is not an llm-fuse-reference/0 plan", dir);
  if (primary) {
    w->signature = strdup(sig->valuestring);
    w->subgraph = strdup(cJSON_IsString(sg) ? sg->valuestring : "?");
    if (!w->signature || !w->subgraph)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    LF_RETURN_IF_ERROR(lf_status_annotate(
        lf_vsignature_parse(w->signature, &w->ins, &w->nin, &w->outs, &w->nout),
        "%s/plan.json", dir));
  }

  const cJSON *t;
  cJSON_ArrayForEach(t, temps) {
    if (p->num_temps == MAX_TEMPS)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "more than %d temps",
                       MAX_TEMPS);
    const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(t, "bytes");
    const cJSON *init = cJSON_GetObjectItemCaseSensitive(t, "init_hex");
    size_t n = cJSON_IsNumber(bytes) ? (size_t)bytes->valuedouble : 0;
    size_t i = p->num_temps++;
    p->temp_bytes[i] = n;
    CU_TRY(cuMemAlloc(&p->temps[i], n ? n : 1));
    if (cJSON_IsString(init) && n) {
      size_t hex = strlen(init->valuestring) / 2;
      if (!hex)
        continue;
      unsigned char *h = malloc(n);
      if (!h)
        return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
      for (size_t k = 0; k < n; ++k) {
        unsigned v = 0;
        sscanf(init->valuestring + 2 * (k % hex), "%2x", &v);
        h[k] = (unsigned char)v;
      }
      lf_status_t s = CU(cuMemcpyHtoD(p->temps[i], h, n));
      free(h);
      LF_RETURN_IF_ERROR(s);
    }
  }
  const cJSON *k;
  cJSON_ArrayForEach(k, kernels) {
    if (!cJSON_IsString(k) || p->num_kernels == MAX_KERNELS)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "bad kernel list in plan");
    ref_kernel_t *rk = &p->kernels[p->num_kernels++];
    snprintf(rk->name, sizeof(rk->name), "%s", k->valuestring);
    lf_strbuf_t image;
    lf_strbuf_init(&image, 64u << 20);
    char path[4096];
    lf_status_t s = read_binary(dir, rk->name, &image, path, sizeof(path));
    if (!s)
      s = CU(cuModuleLoadData(&rk->module, image.data));
    lf_strbuf_free(&image);
    if (!s)
      s = CU(cuModuleGetFunction(&rk->function, rk->module, rk->name));
    if (s)
      return lf_status_annotate(s, "reference kernel %s", rk->name);
  }
  size_t n = (size_t)cJSON_GetArraySize(steps);
  p->steps = calloc(n ? n : 1, sizeof(*p->steps));
  if (!p->steps)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  const cJSON *st;
  cJSON_ArrayForEach(st, steps) {
    step_t *step = &p->steps[p->num_steps++];
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(st, "op");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(st, "args");
    if (!cJSON_IsString(op) || !cJSON_IsArray(args) ||
        cJSON_GetArraySize(args) > MAX_ARGS)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "bad step in plan");
    step->is_copy = !strcmp(op->valuestring, "copy");
    if (!step->is_copy) {
      const cJSON *kn = cJSON_GetObjectItemCaseSensitive(st, "kernel");
      const cJSON *grid = cJSON_GetObjectItemCaseSensitive(st, "grid");
      const cJSON *block = cJSON_GetObjectItemCaseSensitive(st, "block");
      if (!cJSON_IsString(kn) || cJSON_GetArraySize(grid) != 3 ||
          cJSON_GetArraySize(block) != 3)
        return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "bad launch in plan");
      step->kernel = p->num_kernels;
      for (size_t i = 0; i < p->num_kernels; ++i)
        if (!strcmp(p->kernels[i].name, kn->valuestring))
          step->kernel = i;
      if (step->kernel == p->num_kernels)
        return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                         "plan launches unknown kernel %s", kn->valuestring);
      for (int d = 0; d < 3; ++d) {
        step->grid[d] = (unsigned)cJSON_GetArrayItem(grid, d)->valuedouble;
        step->block[d] = (unsigned)cJSON_GetArrayItem(block, d)->valuedouble;
      }
    }
    const cJSON *a;
    cJSON_ArrayForEach(a, args) {
      arg_t *arg = &step->args[step->num_args++];
      const cJSON *kind = cJSON_GetObjectItemCaseSensitive(a, "kind");
      const cJSON *index = cJSON_GetObjectItemCaseSensitive(a, "index");
      const cJSON *type = cJSON_GetObjectItemCaseSensitive(a, "type");
      if (!cJSON_IsString(kind) || !cJSON_IsString(type))
        return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "bad argument in plan");
      const char *kd = kind->valuestring;
      arg->index = cJSON_IsNumber(index) ? (size_t)index->valuedouble : 0;
      if (!strcmp(kd, "input")) {
        arg->kind = 0;
        if (arg->index >= w->nin)
          return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "plan input %zu",
                           arg->index);
      } else if (!strcmp(kd, "output")) {
        arg->kind = 1;
        if (arg->index >= w->nout)
          return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "plan output %zu",
                           arg->index);
      } else if (!strcmp(kd, "temp")) {
        arg->kind = 2;
        if (arg->index >= p->num_temps)
          return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "plan temp %zu",
                           arg->index);
      } else {
        LF_RETURN_IF_ERROR(put_value(a, type->valuestring, arg));
      }
    }
    if (step->is_copy && step->num_args != 2)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "copy needs 2 args");
  }
  return LF_OK;
}

/* Reads result.json. Problems with the request are statuses; a candidate
 * that does not load is a verdict (set in *out_reason). */
static lf_status_t load_candidate(worker_t *w, const cJSON *res,
                                  const char *dir, char *why, size_t why_n) {
  const cJSON *ok = cJSON_GetObjectItemCaseSensitive(res, "ok");
  const cJSON *kernel = cJSON_GetObjectItemCaseSensitive(res, "kernel");
  const cJSON *grid = cJSON_GetObjectItemCaseSensitive(res, "grid");
  const cJSON *block = cJSON_GetObjectItemCaseSensitive(res, "block");
  const cJSON *smem =
      cJSON_GetObjectItemCaseSensitive(res, "dynamic_shared_memory");
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(res, "params");
  const cJSON *atomics = cJSON_GetObjectItemCaseSensitive(res, "atomics");
  if (!cJSON_IsTrue(ok) || !cJSON_IsString(kernel) ||
      cJSON_GetArraySize(grid) != 3 || cJSON_GetArraySize(block) != 3 ||
      !cJSON_IsArray(params))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "%s/result.json is not a successful build result", dir);
  snprintf(w->kernel_name, sizeof(w->kernel_name), "%s", kernel->valuestring);
  for (int d = 0; d < 3; ++d) {
    w->grid[d] = (unsigned)cJSON_GetArrayItem(grid, d)->valuedouble;
    w->block[d] = (unsigned)cJSON_GetArrayItem(block, d)->valuedouble;
  }
  w->smem = cJSON_IsNumber(smem) ? (unsigned)smem->valuedouble : 0;
  w->atomics = w->opt->atomics || cJSON_IsTrue(atomics);
  const cJSON *p;
  size_t num_ordinary = 0;
  cJSON_ArrayForEach(p, params) {
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(p, "role");
    const cJSON *operand = cJSON_GetObjectItemCaseSensitive(p, "operand");
    if (!cJSON_IsString(role) || !cJSON_IsNumber(operand) ||
        w->num_cparams == MAX_ARGS)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "bad params in %s", dir);
    if (!strcmp(role->valuestring, "tensor_map")) {
      /* A map the worker encodes on the viewed buffer of each launch. */
      size_t i = w->num_cparams++, m = w->num_maps++;
      lf_tensor_map_spec_t *spec = &w->map_spec[m];
      LF_RETURN_IF_ERROR(lf_status_annotate(
          lf_vtensor_map_parse(p, w->nin + w->nout, spec),
          "candidate parameter %zu in %s/result.json", i, dir));
      size_t op = (size_t)spec->param;
      LF_RETURN_IF_ERROR(lf_status_annotate(
          lf_vtensor_map_check_operand(
              spec, op < w->nin ? &w->ins[op] : &w->outs[op - w->nin]),
          "candidate parameter %zu in %s/result.json", i, dir));
      lf_tensor_map_args_t args;
      LF_RETURN_IF_ERROR(lf_status_annotate(
          lf_tensor_map_args(spec, &args),
          "candidate parameter %zu in %s/result.json", i, dir));
      w->cparam_kind[i] = 2;
      w->cparam_index[i] = m;
      continue;
    }
    ++num_ordinary;
    size_t i = w->num_cparams++;
    w->cparam_kind[i] = strcmp(role->valuestring, "input") ? 1 : 0;
    w->cparam_index[i] = (size_t)operand->valuedouble;
    if (w->cparam_index[i] >= (w->cparam_kind[i] ? w->nout : w->nin))
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "candidate parameter %zu names operand %zu, which the "
                       "subgraph does not have",
                       i, w->cparam_index[i]);
  }
  if (num_ordinary != w->nin + w->nout)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "the candidate has %zu parameters (besides tensor maps), "
                     "the subgraph %zu operands",
                     num_ordinary, w->nin + w->nout);

  lf_strbuf_t image;
  lf_strbuf_init(&image, 64u << 20);
  char path[4096];
  lf_status_t s = read_binary(dir, "kernel", &image, path, sizeof(path));
  if (s) {
    lf_strbuf_free(&image);
    return s;
  }
  s = CU(cuModuleLoadData(&w->cmod, image.data));
  lf_strbuf_free(&image);
  if (!s)
    s = CU(cuModuleGetFunction(&w->cfn, w->cmod, w->kernel_name));
  if (!s && w->smem > 48 * 1024)
    s = CU(cuFuncSetAttribute(
        w->cfn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)w->smem));
  if (s) {
    lf_status_format(s, why, why_n);
    lf_status_free(s);
  }
  return LF_OK;
}

/* ---- Device set-up ------------------------------------------------------ */

static lf_status_t get_fn(worker_t *w, CUfunction *f, const char *name) {
  CU_TRY(cuModuleGetFunction(f, w->helpers, name));
  return LF_OK;
}

static lf_status_t setup_device(worker_t *w) {
  LF_RETURN_IF_ERROR(lf_cuda_driver_load(&w->drv));
  int count = 0;
  LF_RETURN_IF_ERROR(lf_cuda_device_count(w->drv, &count));
  if (w->opt->device >= count)
    return LF_STATUS(LF_STATUS_UNAVAILABLE,
                     "device %d requested, the driver sees %d", w->opt->device,
                     count);
  CU_TRY(cuDeviceGet(&w->dev, w->opt->device));
  CU_TRY(cuDeviceGetName(w->device_name, sizeof(w->device_name) - 1, w->dev));
  CU_TRY(cuDeviceGetAttribute(
      &w->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, w->dev));
  CU_TRY(cuDeviceGetAttribute(
      &w->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, w->dev));
  CU_TRY(cuDeviceGetAttribute(&w->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                              w->dev));
  CU_TRY(cuDeviceGetAttribute(&w->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                              w->dev));
  if (w->drv->cuDeviceGetAttribute(&w->clock_khz, 13 /* CLOCK_RATE */,
                                   w->dev) != CUDA_SUCCESS ||
      w->clock_khz <= 0)
    w->clock_khz = 2000000;
  CU_TRY(cuDevicePrimaryCtxRetain(&w->ctx, w->dev));
  CU_TRY(cuCtxSetCurrent(w->ctx));
  CU_TRY(cuStreamCreate(&w->stream, CU_STREAM_NON_BLOCKING));
  lf_status_t s = LF_STATUS(LF_STATUS_UNAVAILABLE, "no helper image");
#ifdef LF_VERIFY_KERNELS_CUBIN
  if (w->cc_major == 9 && w->cc_minor == 0) {
    lf_status_free(s);
    s = CU(cuModuleLoadData(&w->helpers, lf_verify_kernels_cubin));
  }
#endif
  if (s) {
    lf_status_free(s);
    CU_TRY(cuModuleLoadData(&w->helpers, lf_verify_kernels_ptx));
  }
  LF_RETURN_IF_ERROR(get_fn(w, &w->f_fill, "lf_fill"));
  LF_RETURN_IF_ERROR(get_fn(w, &w->f_special, "lf_special"));
  LF_RETURN_IF_ERROR(get_fn(w, &w->f_checksum, "lf_checksum"));
  LF_RETURN_IF_ERROR(get_fn(w, &w->f_count_not, "lf_count_not"));
  LF_RETURN_IF_ERROR(get_fn(w, &w->f_stats, "lf_stats"));
  LF_RETURN_IF_ERROR(get_fn(w, &w->f_compare, "lf_compare"));
  LF_RETURN_IF_ERROR(get_fn(w, &w->f_square, "lf_square"));
  return LF_OK;
}

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* TF32 mode: whether input i has a squared copy of its own (a float
 * buffer); the others are used as they are in the scale run. */
static bool sq_owned(const worker_t *w, size_t i) {
  return !w->ins[i].is_scalar && lf_vdtype_is_float(w->ins[i].dtype);
}

/* Whether output o is widened (f32) in the wide plan. */
static bool widened(const worker_t *w, size_t o) {
  return w->judge.use_wide && o < 64 && (w->judge.wide_outputs >> o & 1);
}

/* Bytes of output o as plan `p` writes it: f32 where the wide plan
 * widened it, else the subgraph's type. */
static size_t out_bytes_of(const worker_t *w, const ref_plan_t *p, size_t o) {
  return p->wide && widened(w, o) ? w->outs[o].count * 4 : w->outs[o].bytes;
}

/* Whether a run on the squared inputs gives error scales: TF32 mode, or a
 * 16-bit contraction summed in f32 (the plan's "acc32"). */
static bool scale_wanted(const worker_t *w) {
  return w->opt->tf32_k > 0 || w->judge.acc32_k > 0;
}

/* The plan the scale run uses: the wide one where there is one (an f16
 * result: its squares overflow f16, not f32), else the one that gives the
 * expected values (the truth when one judges). */
static const ref_plan_t *scale_plan(const worker_t *w) {
  return w->judge.use_wide ? &w->wide : w->up_out ? &w->truth : &w->ref;
}

static lf_status_t alloc_buffers(worker_t *w) {
  w->in = calloc(w->nin + 1, sizeof(*w->in));
  w->scalar = calloc(w->nin + 1, sizeof(*w->scalar));
  w->ref_out = calloc(w->nout, sizeof(*w->ref_out));
  for (int r = 0; r < 2; ++r) {
    w->arena[r] = calloc(w->nout, sizeof(CUdeviceptr));
    w->cand[r] = calloc(w->nout, sizeof(CUdeviceptr));
  }
  /* outputs, inputs, then (with a truth) the upstream plan's outputs
   * compared with the truth's */
  w->num_scratch = w->nin + w->nout + (w->judge.use_truth ? w->nout : 0);
  if (w->judge.use_truth && !(w->up_out = calloc(w->nout, sizeof(*w->up_out))))
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  w->host_scratch = calloc(w->num_scratch, sizeof(scratch_t));
  if (!w->in || !w->scalar || !w->ref_out || !w->arena[0] || !w->arena[1] ||
      !w->cand[0] || !w->cand[1] || !w->host_scratch)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < w->nin; ++i)
    if (!w->ins[i].is_scalar)
      CU_TRY(cuMemAlloc(&w->in[i], round_up(w->ins[i].bytes, 256)));
  for (size_t o = 0; o < w->nout; ++o) {
    size_t b = round_up(w->outs[o].bytes, 256);
    CU_TRY(cuMemAlloc(&w->ref_out[o], b));
    if (w->up_out)
      CU_TRY(cuMemAlloc(&w->up_out[o], b));
    for (int r = 0; r < 2; ++r) {
      CU_TRY(cuMemAlloc(&w->arena[r][o], b + 2 * RED_ZONE));
      CU_TRY(cuMemsetD8Async(w->arena[r][o], RED_BYTE, b + 2 * RED_ZONE,
                             w->stream));
      w->cand[r][o] = w->arena[r][o] + RED_ZONE;
    }
  }
  if (scale_wanted(w)) {
    w->sq_in = calloc(w->nin + 1, sizeof(*w->sq_in));
    w->sq_scalar = calloc(w->nin + 1, sizeof(*w->sq_scalar));
    w->scale_out = calloc(w->nout, sizeof(*w->scale_out));
    if (!w->sq_in || !w->sq_scalar || !w->scale_out)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    for (size_t i = 0; i < w->nin; ++i) {
      if (sq_owned(w, i))
        CU_TRY(cuMemAlloc(&w->sq_in[i], round_up(w->ins[i].bytes, 256)));
      else
        w->sq_in[i] = w->in[i];
    }
    for (size_t o = 0; o < w->nout; ++o)
      CU_TRY(cuMemAlloc(&w->scale_out[o],
                        round_up(out_bytes_of(w, scale_plan(w), o), 256)));
  }
  if (w->judge.use_wide) {
    if (!(w->wide_out = calloc(w->nout, sizeof(*w->wide_out))))
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    for (size_t o = 0; o < w->nout; ++o)
      CU_TRY(cuMemAlloc(&w->wide_out[o],
                        round_up(out_bytes_of(w, &w->wide, o), 256)));
  }
  CU_TRY(cuMemAlloc(&w->scratch, w->num_scratch * sizeof(scratch_t)));
  return LF_OK;
}

/* ---- Launch helpers ----------------------------------------------------- */

static unsigned blocks_for(const worker_t *w, size_t n) {
  size_t b = (n + 255) / 256, cap = (size_t)w->sms * 8;
  return (unsigned)(b == 0 ? 1 : b < cap ? b : cap);
}

static lf_status_t helper(worker_t *w, CUfunction f, size_t n, void **args) {
  CU_TRY(cuLaunchKernel(f, blocks_for(w, n), 1, 1, 256, 1, 1, 0, w->stream,
                        args, NULL));
  return LF_OK;
}

static CUdeviceptr scratch_at(const worker_t *w, size_t slot, size_t offset) {
  return w->scratch + slot * sizeof(scratch_t) + offset;
}

/* Waits for the stream with a deadline. *out_timeout is set when the
 * deadline passed; an error from the stream is returned as a status (and
 * marks the context sticky: every later call would fail the same way). */
static lf_status_t wait_stream(worker_t *w, double limit_ms,
                               bool *out_timeout) {
  *out_timeout = false;
  CUevent ev;
  CU_TRY(cuEventCreate(&ev, 2 /* CU_EVENT_DISABLE_TIMING */));
  lf_status_t s = CU(cuEventRecord(ev, w->stream));
  double start = now_ms();
  long sleep_ns = 2000;
  while (!s) {
    CUresult r = w->drv->cuEventQuery(ev);
    if (r == CUDA_SUCCESS)
      break;
    if (r != CUDA_ERROR_NOT_READY) {
      s = lf_cuda_result_to_status(w->drv, r, "cuEventQuery", __FILE__,
                                   __LINE__);
      w->sticky = true;
      return s; /* the event cannot be destroyed in a broken context */
    }
    if (now_ms() - start > limit_ms) {
      *out_timeout = true;
      w->sticky = true;
      return LF_OK;
    }
    struct timespec ts = {0, sleep_ns};
    nanosleep(&ts, NULL);
    if (sleep_ns < 200000)
      sleep_ns *= 2;
  }
  w->drv->cuEventDestroy(ev);
  return s;
}

static void param_ptr(worker_t *w, int kind, size_t index, CUdeviceptr *outs,
                      void **slot) {
  if (kind == 0)
    *slot = w->ins[index].is_scalar ? (void *)w->scalar[index]
                                    : (void *)&w->in[index];
  else
    *slot = (void *)&outs[index];
}

/* Enqueues plan `p`, writing the subgraph's results into `outs`. */
static lf_status_t run_plan(worker_t *w, const ref_plan_t *p,
                            CUdeviceptr *outs) {
  for (size_t s = 0; s < p->num_steps; ++s) {
    step_t *st = &p->steps[s];
    void *params[MAX_ARGS];
    CUdeviceptr ptrs[MAX_ARGS];
    for (size_t a = 0; a < st->num_args; ++a) {
      const arg_t *arg = &st->args[a];
      if (arg->kind == 2) {
        ptrs[a] = p->temps[arg->index];
        params[a] = &ptrs[a];
      } else if (arg->kind == 3) {
        params[a] = (void *)arg->value;
      } else {
        param_ptr(w, arg->kind, arg->index, outs, &params[a]);
      }
    }
    if (st->is_copy) {
      size_t bytes[2];
      CUdeviceptr buf[2];
      for (int i = 0; i < 2; ++i) {
        const arg_t *arg = &st->args[i];
        buf[i] = *(CUdeviceptr *)params[i];
        bytes[i] = arg->kind == 2   ? p->temp_bytes[arg->index]
                   : arg->kind == 0 ? w->ins[arg->index].bytes
                                    : out_bytes_of(w, p, arg->index);
      }
      CU_TRY(cuMemcpyDtoDAsync(buf[1], buf[0],
                               bytes[0] < bytes[1] ? bytes[0] : bytes[1],
                               w->stream));
    } else {
      CU_TRY(cuLaunchKernel(p->kernels[st->kernel].function, st->grid[0],
                            st->grid[1], st->grid[2], st->block[0],
                            st->block[1], st->block[2], 0, w->stream, params,
                            NULL));
    }
  }
  return LF_OK;
}

/* TF32 mode and 16-bit contractions summed in f32: enqueues scale_plan()
 * on the squared inputs, into scale_out: per output element, sum
 * (a_k b_k)^2 for a contraction, the scale of the rounding error
 * (lf_compare). The inputs are swapped in for the run and restored. An f16
 * input's squares saturate at 65504 (lf_square), which makes s smaller,
 * never larger, where |x| > 256. */
static lf_status_t run_scale_plan(worker_t *w) {
  for (size_t i = 0; i < w->nin; ++i) {
    const lf_voperand_t *op = &w->ins[i];
    if (op->is_scalar) {
      memcpy(w->sq_scalar[i], w->scalar[i], 8);
      if (op->dtype == LF_VDT_F32) {
        float f;
        memcpy(&f, w->scalar[i], 4);
        f *= f;
        memcpy(w->sq_scalar[i], &f, 4);
      } else if (op->dtype == LF_VDT_F64) {
        double d;
        memcpy(&d, w->scalar[i], 8);
        d *= d;
        memcpy(w->sq_scalar[i], &d, 8);
      }
      continue;
    }
    if (!sq_owned(w, i))
      continue;
    unsigned long long n = op->count;
    int dt = op->dtype;
    void *a[] = {&w->in[i], &w->sq_in[i], &n, &dt};
    LF_RETURN_IF_ERROR(helper(w, w->f_square, n, a));
  }
  CUdeviceptr *in = w->in;
  unsigned char(*scalar)[8] = w->scalar;
  w->in = w->sq_in;
  w->scalar = w->sq_scalar;
  lf_status_t s = run_plan(w, scale_plan(w), w->scale_out);
  w->in = in;
  w->scalar = scalar;
  return s;
}

/* Encodes the candidate's tensor maps on the buffers of a launch into
 * `outs`: each map whose buffer is not the one it was last encoded on.
 * A failure is the candidate's (its map asks for what the driver refuses):
 * *out_failed is set, and nothing may be launched. */
static lf_status_t encode_maps(worker_t *w, CUdeviceptr *outs,
                               bool *out_failed) {
  *out_failed = false;
  for (size_t m = 0; m < w->num_maps; ++m) {
    size_t op = (size_t)w->map_spec[m].param;
    CUdeviceptr base = op < w->nin ? w->in[op] : outs[op - w->nin];
    if (w->map_base[m] == base)
      continue;
    w->map_base[m] = 0;
    lf_status_t s =
        lf_tensor_map_encode(w->drv, &w->map_spec[m], base, w->map_bytes[m]);
    if (s) {
      *out_failed = true;
      return s;
    }
    w->map_base[m] = base;
    ++w->map_encodes;
  }
  return LF_OK;
}

/* Launches the candidate on `outs`. A tensor map that does not encode sets
 * *out_map_failed and returns its status, with nothing launched. */
static lf_status_t launch_candidate(worker_t *w, CUdeviceptr *outs,
                                    bool *out_map_failed) {
  void *params[MAX_ARGS];
  LF_RETURN_IF_ERROR(encode_maps(w, outs, out_map_failed));
  for (size_t i = 0; i < w->num_cparams; ++i) {
    if (w->cparam_kind[i] == 2) /* args[i] points at the 128-byte map */
      params[i] = w->map_bytes[w->cparam_index[i]];
    else
      param_ptr(w, w->cparam_kind[i], w->cparam_index[i], outs, &params[i]);
  }
  CU_TRY(cuLaunchKernel(w->cfn, w->grid[0], w->grid[1], w->grid[2], w->block[0],
                        w->block[1], w->block[2], w->smem, w->stream, params,
                        NULL));
  return LF_OK;
}

static lf_status_t poison(worker_t *w, int run, bool finite) {
  for (size_t o = 0; o < w->nout; ++o) {
    lf_vpoison_t p = lf_vpoison_for(w->outs[o].dtype, finite);
    size_t n = w->outs[o].bytes / p.width;
    if (p.width == 4)
      CU_TRY(cuMemsetD32Async(w->cand[run][o], p.value, n, w->stream));
    else if (p.width == 2)
      CU_TRY(cuMemsetD16Async(w->cand[run][o], (unsigned short)p.value, n,
                              w->stream));
    else
      CU_TRY(cuMemsetD8Async(w->cand[run][o], (unsigned char)p.value, n,
                             w->stream));
  }
  return LF_OK;
}

/* ---- Inputs -------------------------------------------------------------- */

static double host_normal(uint64_t *state) {
  uint64_t a = lf_vseed_derive(*state, 1, 0), b = lf_vseed_derive(*state, 2, 0);
  *state = b;
  double u1 = ((a >> 11) + 0.5) / 9007199254740992.0;
  double u2 = ((b >> 11) + 0.5) / 9007199254740992.0;
  return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

static lf_status_t draw_inputs(worker_t *w, lf_vdist_t dist, uint64_t seed) {
  for (size_t i = 0; i < w->nin; ++i) {
    lf_voperand_t *op = &w->ins[i];
    if (op->is_scalar) {
      uint64_t st = seed ^ (i * 0x9E37ull);
      double v = host_normal(&st);
      memset(w->scalar[i], 0, 8);
      if (op->dtype == LF_VDT_F32) {
        float f = (float)v;
        memcpy(w->scalar[i], &f, 4);
      } else if (op->dtype == LF_VDT_F64) {
        memcpy(w->scalar[i], &v, 8);
      } else if (op->dtype == LF_VDT_I64) {
        int64_t x = (int64_t)llround(4 * v);
        memcpy(w->scalar[i], &x, 8);
      } else {
        int32_t x = (int32_t)lround(4 * v);
        memcpy(w->scalar[i], &x, 4);
      }
      continue;
    }
    unsigned long long n = op->count, sd = seed, salt = i;
    int dt = op->dtype, d = dist == LF_VDIST_HEAVY ? 1 : 0;
    float scale = 1.0f;
    void *fa[] = {&w->in[i], &n, &dt, &d, &sd, &salt, &scale};
    LF_RETURN_IF_ERROR(helper(w, w->f_fill, n, fa));
    int mode = -1;
    unsigned long long count = 0;
    double magnitude = 1000.0;
    if (dist == LF_VDIST_SPIKE) {
      mode = 0;
      count = 8;
    } else if (dist == LF_VDIST_FINITE_SPECIAL &&
               lf_vdtype_is_float(op->dtype)) {
      mode = 1;
      count = 16;
    } else if (dist == LF_VDIST_NONFINITE && lf_vdtype_is_float(op->dtype)) {
      mode = 2;
      count = 6;
    }
    if (mode >= 0) {
      void *sa[] = {&w->in[i], &n, &dt, &mode, &sd, &salt, &count, &magnitude};
      CU_TRY(cuLaunchKernel(w->f_special, 1, 1, 1, 32, 1, 1, 0, w->stream, sa,
                            NULL));
    }
  }
  return LF_OK;
}

static lf_status_t checksum_inputs(worker_t *w, bool after) {
  for (size_t i = 0; i < w->nin; ++i) {
    if (w->ins[i].is_scalar)
      continue;
    CUdeviceptr out = scratch_at(w, w->nout + i,
                                 after ? offsetof(scratch_t, sum_after)
                                       : offsetof(scratch_t, sum_before));
    unsigned long long bytes = w->ins[i].bytes;
    void *a[] = {&w->in[i], &bytes, &out};
    LF_RETURN_IF_ERROR(helper(w, w->f_checksum, bytes / 8 + 1, a));
  }
  return LF_OK;
}

static lf_status_t read_scratch(worker_t *w) {
  CU_TRY(cuMemcpyDtoHAsync(w->host_scratch, w->scratch,
                           w->num_scratch * sizeof(scratch_t), w->stream));
  CU_TRY(cuStreamSynchronize(w->stream));
  return LF_OK;
}

static lf_status_t reset_scratch(worker_t *w) {
  memset(w->host_scratch, 0, w->num_scratch * sizeof(scratch_t));
  for (size_t i = 0; i < w->num_scratch; ++i) {
    w->host_scratch[i].stats.min_ord = ~0ull;
    for (int r = 0; r < 2; ++r)
      w->host_scratch[i].cmp[r].first_bad = ~0ull;
  }
  CU_TRY(cuMemcpyHtoD(w->scratch, w->host_scratch,
                      w->num_scratch * sizeof(scratch_t)));
  return LF_OK;
}

/* ---- The verdict ------------------------------------------------------ */

typedef struct outcome_s {
  const char *reason; /* NULL: passed */
  char message[1024];
} outcome_t;

static void fail(outcome_t *o, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(outcome_t *o, const char *reason, const char *fmt, ...) {
  if (o->reason)
    return; /* the first failure is the reason */
  o->reason = reason;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(o->message, sizeof(o->message), fmt, ap);
  va_end(ap);
}

static double element_value(const unsigned char *b, lf_vdtype_t dt) {
  switch (dt) {
  case LF_VDT_F32: {
    float f;
    memcpy(&f, b, 4);
    return f;
  }
  case LF_VDT_F64: {
    double d;
    memcpy(&d, b, 8);
    return d;
  }
  case LF_VDT_BF16: {
    uint32_t u = (uint32_t)(b[0] | b[1] << 8) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  case LF_VDT_F16: {
    unsigned h = b[0] | b[1] << 8, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0    ? ldexp(m, -24)
               : e == 31 ? (m ? NAN : INFINITY)
                         : ldexp(m + 1024, (int)e - 25);
    return h & 0x8000 ? -v : v;
  }
  case LF_VDT_I8:
    return (signed char)b[0];
  case LF_VDT_I16: {
    int16_t v;
    memcpy(&v, b, 2);
    return v;
  }
  case LF_VDT_I32: {
    int32_t v;
    memcpy(&v, b, 4);
    return v;
  }
  case LF_VDT_I64: {
    int64_t v;
    memcpy(&v, b, 8);
    return (double)v;
  }
  default:
    return b[0];
  }
}

static cJSON *num(double v) {
  /* JSON has no NaN/Inf: those become strings */
  if (isnan(v))
    return cJSON_CreateString("nan");
  if (isinf(v))
    return cJSON_CreateString(v > 0 ? "inf" : "-inf");
  return cJSON_CreateNumber(v);
}

static void add_num(cJSON *o, const char *k, double v) {
  cJSON_AddItemToObject(o, k, num(v));
}

static void add_hex(cJSON *o, const char *k, uint64_t v) {
  char b[32];
  snprintf(b, sizeof(b), "0x%016llx", (unsigned long long)v);
  cJSON_AddStringToObject(o, k, b);
}

/* Output o's tolerance: its element type's, or TF32's for an f32 output
 * in TF32 mode (--tf32-k). */
static lf_vtolerance_t out_tolerance(const worker_t *w, size_t o) {
  if (w->opt->tf32_k > 0 && w->outs[o].dtype == LF_VDT_F32)
    return lf_vtolerance_tf32(w->opt->tf32_k);
  return lf_vtolerance_for(w->outs[o].dtype);
}

/* Output o's bound on the error scale: TF32 mode's for an f32 output, the
 * f32 accumulation's for a float output of a 16-bit contraction (the
 * larger where both apply); 0: none. */
static double out_tf32_stol(const worker_t *w, size_t o) {
  return w->outs[o].dtype == LF_VDT_F32 ? lf_vtf32_scale_tol(w->opt->tf32_k)
                                        : 0.0;
}
static double out_acc32_stol(const worker_t *w, size_t o) {
  return lf_vdtype_is_float(w->outs[o].dtype)
             ? lf_vacc32_scale_tol(w->judge.acc32_k)
             : 0.0;
}
static double out_stol(const worker_t *w, size_t o) {
  return fmax(out_tf32_stol(w, o), out_acc32_stol(w, o));
}

/* Output o's error scale (lf_compare's `scale`): the scale run's output
 * where a bound applies, else none (0); its element type: f32 where the
 * scale run's plan widened it. */
static CUdeviceptr out_scale(const worker_t *w, size_t o) {
  return w->scale_out && out_stol(w, o) > 0 ? w->scale_out[o] : 0;
}
static int out_scale_dtype(const worker_t *w, size_t o) {
  return scale_plan(w)->wide && widened(w, o) ? LF_VDT_F32
                                              : (int)w->outs[o].dtype;
}

/* ---- Dumping a trial (a debugging aid) ---------------------------------- */

static lf_status_t dump_buffer(worker_t *w, const char *dir, const char *name,
                               CUdeviceptr p, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  void *h = malloc(bytes ? bytes : 1);
  if (!h)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  lf_status_t s = CU(cuMemcpyDtoH(h, p, bytes));
  FILE *f = s ? NULL : fopen(path, "wb");
  if (!s && (!f || fwrite(h, 1, bytes, f) != bytes))
    s = LF_STATUS(LF_STATUS_INTERNAL, "cannot write %s", path);
  if (f && fclose(f) && !s)
    s = LF_STATUS(LF_STATUS_INTERNAL, "cannot write %s", path);
  free(h);
  return s;
}

/* With LF_VERIFY_DUMP_DIR set (and LF_VERIFY_DUMP_TRIAL = the trial's
 * index, or unset for every trial), writes the trial's inputs, reference
 * outputs, candidate outputs (first run) and wide outputs as raw files
 * DIR/tT.inI.bin, .refO.bin, .candO.bin, .wideO.bin, so that a refusal can
 * be examined off line (docs/verification.md, "Dumping a trial"). Not part
 * of the protocol: nothing in the verdict depends on it. */
static lf_status_t dump_trial(worker_t *w, int index) {
  const char *dir = getenv("LF_VERIFY_DUMP_DIR");
  const char *which = getenv("LF_VERIFY_DUMP_TRIAL");
  if (!dir || !*dir || (which && *which && atoi(which) != index))
    return LF_OK;
  char name[64];
  for (size_t i = 0; i < w->nin; ++i) {
    if (w->ins[i].is_scalar)
      continue;
    snprintf(name, sizeof(name), "t%d.in%zu.bin", index, i);
    LF_RETURN_IF_ERROR(dump_buffer(w, dir, name, w->in[i], w->ins[i].bytes));
  }
  for (size_t o = 0; o < w->nout; ++o) {
    snprintf(name, sizeof(name), "t%d.ref%zu.bin", index, o);
    LF_RETURN_IF_ERROR(
        dump_buffer(w, dir, name, w->ref_out[o], w->outs[o].bytes));
    snprintf(name, sizeof(name), "t%d.cand%zu.bin", index, o);
    LF_RETURN_IF_ERROR(
        dump_buffer(w, dir, name, w->cand[0][o], w->outs[o].bytes));
    if (w->wide_out) {
      snprintf(name, sizeof(name), "t%d.wide%zu.bin", index, o);
      LF_RETURN_IF_ERROR(dump_buffer(w, dir, name, w->wide_out[o],
                                     out_bytes_of(w, &w->wide, o)));
    }
  }
  return LF_OK;
}

/* ---- One trial ----------------------------------------------------------- */

static lf_status_t run_trial(worker_t *w, const lf_vtrial_t *trial,
                             cJSON *record, outcome_t *out) {
  const lf_verify_worker_options_t *opt = w->opt;
  uint64_t seed = trial->seed;
  int redraw = 0;
  bool skipped = false;
  double atol[64] = {0};
  const char *degenerate = NULL;
  for (;; ++redraw) {
    seed = lf_vseed_derive(opt->seed, trial->index, redraw);
    LF_RETURN_IF_ERROR(reset_scratch(w));
    LF_RETURN_IF_ERROR(draw_inputs(w, trial->dist, seed));
    /* The upstream plan: its time sets the launch limits; without a
     * truth its outputs are the expected values. */
    double t0 = now_ms();
    LF_RETURN_IF_ERROR(
        run_plan(w, &w->ref, w->up_out ? w->up_out : w->ref_out));
    bool timeout;
    LF_RETURN_IF_ERROR(wait_stream(w, 600000, &timeout));
    if (timeout)
      return LF_STATUS(LF_STATUS_DEADLINE_EXCEEDED,
                       "the reference plan ran for more than 600 s");
    double t = now_ms() - t0;
    if (w->up_out) { /* the opmath truth gives the expected values */
      LF_RETURN_IF_ERROR(run_plan(w, &w->truth, w->ref_out));
      LF_RETURN_IF_ERROR(wait_stream(w, 600000, &timeout));
      if (timeout)
        return LF_STATUS(LF_STATUS_DEADLINE_EXCEEDED,
                         "the truth plan ran for more than 600 s");
    }
    if (!w->progress_sent || t < w->ref_ms_estimate)
      w->ref_ms_estimate = t;
    if (!w->progress_sent && opt->progress_fd >= 0) {
      dprintf(opt->progress_fd, "reference-ms %.3f\n", t);
      w->progress_sent = true;
    }
    LF_RETURN_IF_ERROR(checksum_inputs(w, false));
    for (size_t o = 0; o < w->nout; ++o) {
      unsigned long long n = w->outs[o].count;
      int dt = w->outs[o].dtype;
      CUdeviceptr st = scratch_at(w, o, offsetof(scratch_t, stats));
      void *a[] = {&w->ref_out[o], &n, &dt, &st};
      LF_RETURN_IF_ERROR(helper(w, w->f_stats, n, a));
    }
    LF_RETURN_IF_ERROR(read_scratch(w));
    degenerate = NULL;
    skipped = false;
    for (size_t o = 0; o < w->nout && o < 64; ++o) {
      lf_vstats_t *s = &w->host_scratch[o].stats;
      atol[o] = lf_vatol(s, out_tolerance(w, o));
      if (trial->dist == LF_VDIST_NONFINITE) {
        if (2 * (s->nan + s->inf) > w->outs[o].count)
          skipped = true;
        continue;
      }
      const char *why;
      if (lf_vstats_degenerate(s, w->outs[o].count, &why))
        degenerate = why;
    }
    if (!degenerate || redraw == 3)
      break;
  }
  cJSON_AddStringToObject(record, "distribution", lf_vdist_name(trial->dist));
  add_hex(record, "seed", seed);
  cJSON_AddNumberToObject(record, "redraws", redraw);
  if (degenerate) {
    fail(out, "degenerate-reference",
         "trial %d (%s): %s after %d redraws, so the set-up cannot tell a "
         "constant from the real thing",
         trial->index, lf_vdist_name(trial->dist), degenerate, redraw);
    cJSON_AddStringToObject(record, "result", "degenerate-reference");
    return LF_OK;
  }
  if (skipped) {
    cJSON_AddStringToObject(record, "result", "skipped");
    cJSON_AddStringToObject(record, "note",
                            "the reference turns most outputs into NaN/Inf "
                            "on these inputs: not informative");
    return LF_OK;
  }

  /* The wide plan's unrounded outputs, from the inputs of this trial
   * (before the candidate runs: it may corrupt anything). */
  if (w->wide_out) {
    bool timeout;
    LF_RETURN_IF_ERROR(run_plan(w, &w->wide, w->wide_out));
    LF_RETURN_IF_ERROR(wait_stream(w, 600000, &timeout));
    if (timeout)
      return LF_STATUS(LF_STATUS_DEADLINE_EXCEEDED,
                       "the wide plan ran for more than 600 s");
  }

  /* TF32 mode, 16-bit contractions summed in f32: the error scale of every
   * output element, from the inputs of this trial (before the candidate
   * runs: it may corrupt anything). */
  if (w->scale_out)
    LF_RETURN_IF_ERROR(run_scale_plan(w));

  /* Two candidate runs: outputs poisoned with NaN, then a finite sentinel. */
  double limit =
      fmax(opt->launch_floor_ms, opt->launch_factor * w->ref_ms_estimate);
  for (int run = 0; run < 2; ++run) {
    LF_RETURN_IF_ERROR(poison(w, run, run == 1));
    bool map_failed;
    lf_status_t s = launch_candidate(w, w->cand[run], &map_failed);
    if (s) {
      char m[512];
      lf_status_format(s, m, sizeof(m));
      lf_status_free(s);
      if (map_failed)
        fail(out, "tensor-map",
             "trial %d: a tensor map of the candidate does not encode, so it "
             "was not launched: %s",
             trial->index, m);
      else
        fail(out, "launch-failed", "trial %d: the launch failed: %s",
             trial->index, m);
      cJSON_AddStringToObject(record, "result", out->reason);
      return LF_OK;
    }
    bool timeout;
    s = wait_stream(w, limit, &timeout);
    if (s || timeout) {
      char m[512] = "";
      if (s)
        lf_status_format(s, m, sizeof(m));
      lf_status_free(s);
      if (timeout)
        fail(out, "timeout",
             "trial %d: the candidate ran for more than %.0f ms (limit: "
             "max(%.0f ms, %.0f x the reference's %.3f ms))",
             trial->index, limit, opt->launch_floor_ms, opt->launch_factor,
             w->ref_ms_estimate);
      else
        fail(out, "launch-failed",
             "trial %d: the candidate failed while running (the CUDA "
             "context is now unusable): %s",
             trial->index, m);
      cJSON_AddStringToObject(record, "result", out->reason);
      return LF_OK;
    }
  }
  LF_RETURN_IF_ERROR(checksum_inputs(w, true));
  for (size_t o = 0; o < w->nout; ++o) {
    size_t b = round_up(w->outs[o].bytes, 256);
    for (int run = 0; run < 2; ++run) {
      unsigned long long zone = RED_ZONE,
                         tail = RED_ZONE + b - w->outs[o].bytes;
      unsigned pat = RED_BYTE;
      CUdeviceptr red = scratch_at(w, o, offsetof(scratch_t, red) + 8 * run);
      CUdeviceptr lo = w->arena[run][o],
                  hi = w->cand[run][o] + w->outs[o].bytes;
      void *a1[] = {&lo, &zone, &pat, &red};
      LF_RETURN_IF_ERROR(helper(w, w->f_count_not, zone, a1));
      void *a2[] = {&hi, &tail, &pat, &red};
      LF_RETURN_IF_ERROR(helper(w, w->f_count_not, tail, a2));
    }
    unsigned long long n = w->outs[o].count;
    int dt = w->outs[o].dtype;
    lf_vtolerance_t tol = out_tolerance(w, o);
    double rtol = tol.rtol;
    CUdeviceptr scale = out_scale(w, o);
    double stol = scale ? out_stol(w, o) : 0.0;
    int scale_dt = out_scale_dtype(w, o);
    CUdeviceptr wide = widened(w, o) ? w->wide_out[o] : 0;
    double thr = lf_voverflow_threshold(w->outs[o].dtype);
    for (int run = 0; run < 2; ++run) {
      unsigned long long pbits = lf_vpoison_for(w->outs[o].dtype, run).bits;
      CUdeviceptr other = run == 0 ? w->cand[1][o] : 0;
      CUdeviceptr res = scratch_at(
          w, o, offsetof(scratch_t, cmp) + run * sizeof(lf_vcompare_t));
      int lenient = trial->dist == LF_VDIST_NONFINITE && opt->lenient_nonfinite;
      void *a[] = {&w->ref_out[o],
                   &w->cand[run][o],
                   &other,
                   &n,
                   &dt,
                   &rtol,
                   &atol[o],
                   &pbits,
                   &lenient,
                   &scale,
                   &stol,
                   &wide,
                   &thr,
                   &res,
                   &scale_dt};
      LF_RETURN_IF_ERROR(helper(w, w->f_compare, n, a));
    }
    if (w->up_out) { /* how far the upstream plan is from the truth */
      unsigned long long pbits = lf_vpoison_for(w->outs[o].dtype, 0).bits;
      CUdeviceptr other = 0;
      CUdeviceptr res =
          scratch_at(w, w->nout + w->nin + o, offsetof(scratch_t, cmp));
      int lenient = trial->dist == LF_VDIST_NONFINITE && opt->lenient_nonfinite;
      CUdeviceptr no_scale = 0;
      double no_stol = 0.0;
      void *a[] = {&w->ref_out[o], &w->up_out[o], &other, &n,       &dt,
                   &rtol,          &atol[o],      &pbits, &lenient, &no_scale,
                   &no_stol,       &wide,         &thr,   &res,     &dt};
      LF_RETURN_IF_ERROR(helper(w, w->f_compare, n, a));
    }
  }
  LF_RETURN_IF_ERROR(read_scratch(w));
  LF_RETURN_IF_ERROR(dump_trial(w, trial->index));

  for (size_t i = 0; i < w->nin; ++i) {
    scratch_t *s = &w->host_scratch[w->nout + i];
    if (!w->ins[i].is_scalar && s->sum_before != s->sum_after)
      fail(out, "input-modified",
           "trial %d: input %zu changed while the candidate ran (checksum "
           "0x%016llx before, 0x%016llx after): inputs are read-only",
           trial->index, i, (unsigned long long)s->sum_before,
           (unsigned long long)s->sum_after);
  }
  cJSON *outs = cJSON_AddArrayToObject(record, "outputs");
  for (size_t o = 0; o < w->nout; ++o) {
    scratch_t *s = &w->host_scratch[o];
    if (s->red[0] || s->red[1])
      fail(out, "out-of-bounds-write",
           "trial %d: output %zu: %llu byte(s) written outside the buffer "
           "(in the %d-byte red zones around it)",
           trial->index, o, (unsigned long long)(s->red[0] + s->red[1]),
           RED_ZONE);
  }
  for (size_t o = 0; o < w->nout; ++o) {
    scratch_t *s = &w->host_scratch[o];
    lf_vtolerance_t tol = out_tolerance(w, o);
    cJSON *rec = cJSON_CreateObject();
    cJSON_AddItemToArray(outs, rec);
    cJSON_AddNumberToObject(rec, "index", (double)o);
    cJSON_AddStringToObject(rec, "dtype", lf_vdtype_name(w->outs[o].dtype));
    add_num(rec, "rtol", tol.rtol);
    add_num(rec, "atol", atol[o]);
    uint64_t by_scale = s->cmp[0].by_scale > s->cmp[1].by_scale
                            ? s->cmp[0].by_scale
                            : s->cmp[1].by_scale;
    if (out_scale(w, o) && out_tf32_stol(w, o) > 0) { /* TF32 mode */
      add_num(rec, "tf32_scale_tol", out_tf32_stol(w, o));
      cJSON_AddNumberToObject(rec, "passed_by_tf32_bound", (double)by_scale);
    }
    if (out_scale(w, o) && out_acc32_stol(w, o) > 0) { /* 16-bit, f32 sums */
      add_num(rec, "acc32_scale_tol", out_acc32_stol(w, o));
      cJSON_AddNumberToObject(rec, "passed_by_acc32_bound", (double)by_scale);
      w->acc32_total += by_scale;
    }
    add_num(rec, "reference_mean_abs",
            s->stats.finite ? s->stats.sum_abs / (double)s->stats.finite : 0);
    cJSON_AddNumberToObject(rec, "reference_nonfinite",
                            (double)(s->stats.nan + s->stats.inf));
    double worst = fmax(lf_vfrom_ordered(s->cmp[0].worst_ord),
                        lf_vfrom_ordered(s->cmp[1].worst_ord));
    add_num(rec, "max_err_over_tol", worst);
    cJSON_AddNumberToObject(rec, "bad_nan_poison", (double)s->cmp[0].bad);
    cJSON_AddNumberToObject(rec, "bad_sentinel_poison", (double)s->cmp[1].bad);
    cJSON_AddNumberToObject(
        rec, "unwritten", (double)(s->cmp[0].unwritten + s->cmp[1].unwritten));
    cJSON_AddNumberToObject(rec, "runs_differ", (double)s->cmp[0].differ);
    if (trial->dist == LF_VDIST_NONFINITE && opt->lenient_nonfinite)
      cJSON_AddNumberToObject(rec, "nonfinite_not_propagated",
                              (double)s->cmp[0].relaxed);
    if (widened(w, o)) { /* passed by the overflow-boundary rule */
      uint64_t nb = s->cmp[0].boundary > s->cmp[1].boundary
                        ? s->cmp[0].boundary
                        : s->cmp[1].boundary;
      cJSON_AddNumberToObject(rec, "overflow_boundary", (double)nb);
      w->boundary_total += nb;
    }
    if (w->up_out) { /* the upstream plan against the truth, same rule */
      const lf_vcompare_t *u = &w->host_scratch[w->nout + w->nin + o].cmp[0];
      cJSON_AddNumberToObject(rec, "upstream_bad", (double)u->bad);
      add_num(rec, "upstream_max_err_over_tol", lf_vfrom_ordered(u->worst_ord));
    }
    for (int run = 0; run < 2; ++run) {
      if (!s->cmp[run].bad)
        continue;
      size_t es = lf_vdtype_size(w->outs[o].dtype);
      unsigned char rb[8] = {0}, cb[8] = {0};
      uint64_t idx = s->cmp[run].first_bad;
      CU_TRY(cuMemcpyDtoH(rb, w->ref_out[o] + idx * es, es));
      CU_TRY(cuMemcpyDtoH(cb, w->cand[run][o] + idx * es, es));
      cJSON *fb = cJSON_CreateObject();
      cJSON_AddItemToObject(
          rec, run ? "first_bad_sentinel_poison" : "first_bad_nan_poison", fb);
      cJSON_AddNumberToObject(fb, "index", (double)idx);
      add_num(fb, "reference", element_value(rb, w->outs[o].dtype));
      add_num(fb, "candidate", element_value(cb, w->outs[o].dtype));
      double wv = NAN; /* the wide plan's unrounded value, when there */
      if (widened(w, o)) {
        unsigned char wb[4];
        CU_TRY(cuMemcpyDtoH(wb, w->wide_out[o] + idx * 4, 4));
        wv = element_value(wb, LF_VDT_F32);
        add_num(fb, "unrounded", wv);
      }
      if (run == 1 || !s->cmp[1].bad) {
        char where[160];
        snprintf(where, sizeof(where),
                 "trial %d (%s, seed 0x%016llx): output %zu", trial->index,
                 lf_vdist_name(trial->dist), (unsigned long long)seed, o);
        double rv = element_value(rb, w->outs[o].dtype);
        double cv = element_value(cb, w->outs[o].dtype);
        uint64_t unwritten = s->cmp[0].unwritten + s->cmp[1].unwritten;
        bool a_ok = !s->cmp[0].bad, b_ok = !s->cmp[1].bad;
        if (unwritten && s->cmp[0].unwritten && s->cmp[1].unwritten)
          fail(out, "unwritten-output",
               "%s: %llu element(s) still hold the poison after the launch "
               "(first at flat index %llu; reference %.6g): the kernel must "
               "write every output element",
               where, (unsigned long long)s->cmp[1].unwritten,
               (unsigned long long)s->cmp[run].first_bad, rv);
        else if (a_ok != b_ok)
          fail(out, "poison-dependent",
               "%s: the result depends on what the output held before the "
               "launch (right with the %s poison, %llu element(s) wrong with "
               "the %s one): the kernel reads memory it did not write",
               where, a_ok ? "NaN" : "finite",
               (unsigned long long)(a_ok ? s->cmp[1].bad : s->cmp[0].bad),
               a_ok ? "finite" : "NaN");
        else {
          char unrounded[64] = "";
          if (widened(w, o) && (isinf(rv) || isinf(cv)))
            snprintf(unrounded, sizeof(unrounded), ", unrounded %.6g", wv);
          fail(out, "mismatch",
               "%s: %llu of %zu element(s) out of tolerance (first at flat "
               "index %llu: reference %.6g, candidate %.6g%s; tolerance "
               "%.3g*|ref| + %.3g%s; worst error/tolerance %.3g)",
               where, (unsigned long long)s->cmp[run].bad, w->outs[o].count,
               (unsigned long long)idx, rv, cv, unrounded, tol.rtol, atol[o],
               !out_scale(w, o) ? ""
               : out_acc32_stol(w, o) > out_tf32_stol(w, o)
                   ? " or the f32-accumulation bound (docs/verification.md, "
                     "\"16-bit contractions accumulated in f32\")"
                   : " or the TF32 bound (docs/verification.md, \"TF32 "
                     "mode\")",
               worst);
        }
      }
    }
    if (!s->cmp[0].bad && !s->cmp[1].bad && s->cmp[0].differ && !w->atomics)
      fail(out, "nondeterministic",
           "trial %d: output %zu: two runs on identical inputs differ in %llu "
           "element(s), and the candidate declares no atomics",
           trial->index, o, (unsigned long long)s->cmp[0].differ);
  }
  cJSON_AddBoolToObject(record, "inputs_unchanged",
                        !out->reason || strcmp(out->reason, "input-modified"));
  cJSON_AddStringToObject(record, "result", out->reason ? out->reason : "ok");
  return LF_OK;
}

/* ---- Timing ----------------------------------------------------------- */

static lf_status_t measure_bandwidth(worker_t *w, double *out_bps) {
  size_t half = w->flush_bytes / 2;
  CUevent a, b;
  CU_TRY(cuEventCreate(&a, 0));
  CU_TRY(cuEventCreate(&b, 0));
  float best = 1e30f;
  for (int i = 0; i < 3; ++i) {
    CU_TRY(cuEventRecord(a, w->stream));
    CU_TRY(cuMemcpyDtoDAsync(w->flush + half, w->flush, half, w->stream));
    CU_TRY(cuEventRecord(b, w->stream));
    CU_TRY(cuEventSynchronize(b));
    float ms;
    CU_TRY(cuEventElapsedTime(&ms, a, b));
    best = ms < best ? ms : best;
  }
  w->drv->cuEventDestroy(a);
  w->drv->cuEventDestroy(b);
  *out_bps = 2.0 * (double)half / (best * 1e-3);
  return LF_OK;
}

static lf_status_t flush_l2(worker_t *w, unsigned v) {
  CU_TRY(cuMemsetD32Async(w->flush, v, w->flush_bytes / 4, w->stream));
  return LF_OK;
}

static lf_status_t run_timing(worker_t *w, cJSON *verdict, outcome_t *out) {
  const lf_verify_worker_options_t *opt = w->opt;
  w->flush_bytes = (size_t)w->l2_bytes * 4;
  if (w->flush_bytes < ((size_t)256 << 20))
    w->flush_bytes = (size_t)256 << 20;
  CU_TRY(cuMemAlloc(&w->flush, w->flush_bytes));
  double bw;
  LF_RETURN_IF_ERROR(measure_bandwidth(w, &bw));

  enum { MAX_RUNS = 200 };
  CUevent ev[4 * MAX_RUNS];
  int nev = 0;
  bool map_failed = false; /* the maps were encoded in the trials */
  lf_status_t s = LF_OK;
  for (; nev < 4 * MAX_RUNS && !s; ++nev)
    s = CU(cuEventCreate(&ev[nev], 0));
  if (s)
    goto out_events;
  /* warm-up, and a first estimate of the iteration's cost */
  for (int i = 0; i < 2 && !s; ++i) {
    s = flush_l2(w, i);
    if (!s)
      s = CU(cuEventRecord(ev[0], w->stream));
    if (!s)
      s = run_plan(w, &w->ref, w->ref_out);
    if (!s)
      s = CU(cuEventRecord(ev[1], w->stream));
    if (!s)
      s = flush_l2(w, i);
    if (!s)
      s = CU(cuEventRecord(ev[2], w->stream));
    if (!s)
      s = launch_candidate(w, w->cand[0], &map_failed);
    if (!s)
      s = CU(cuEventRecord(ev[3], w->stream));
  }
  bool timeout = false;
  double limit =
      fmax(opt->launch_floor_ms, opt->launch_factor * w->ref_ms_estimate) * 4;
  if (!s)
    s = wait_stream(w, limit, &timeout);
  if (s || timeout)
    goto out_events;
  float r0, c0, f0;
  if ((s = CU(cuEventElapsedTime(&r0, ev[0], ev[1]))) ||
      (s = CU(cuEventElapsedTime(&f0, ev[1], ev[2]))) ||
      (s = CU(cuEventElapsedTime(&c0, ev[2], ev[3]))))
    goto out_events;
  double iter = r0 + c0 + 2 * f0 + 0.02;
  int runs = (int)(opt->timing_budget_ms / iter);
  runs = runs < 10 ? 10 : runs > MAX_RUNS ? MAX_RUNS : runs;
  for (int i = 0; i < runs && !s; ++i) {
    /* alternate which goes first, so drift hurts neither */
    for (int k = 0; k < 2 && !s; ++k) {
      bool cand = (k == 0) == (i % 2 == 1);
      CUevent a = ev[4 * i + (cand ? 2 : 0)], b = ev[4 * i + (cand ? 3 : 1)];
      s = flush_l2(w, (unsigned)(2 * i + k));
      if (!s)
        s = CU(cuEventRecord(a, w->stream));
      if (!s)
        s = cand ? launch_candidate(w, w->cand[0], &map_failed)
                 : run_plan(w, &w->ref, w->ref_out);
      if (!s)
        s = CU(cuEventRecord(b, w->stream));
    }
  }
  if (!s)
    s = wait_stream(w, limit * runs, &timeout);
  if (s || timeout)
    goto out_events;
  double cand_ms[MAX_RUNS], ref_ms[MAX_RUNS], cmin = 1e30, rmin = 1e30;
  for (int i = 0; i < runs && !s; ++i) {
    float r, c;
    if ((s = CU(cuEventElapsedTime(&r, ev[4 * i], ev[4 * i + 1]))) ||
        (s = CU(cuEventElapsedTime(&c, ev[4 * i + 2], ev[4 * i + 3]))))
      break;
    ref_ms[i] = r;
    cand_ms[i] = c;
    cmin = fmin(cmin, c);
    rmin = fmin(rmin, r);
  }
  if (s)
    goto out_events;
  double cm = lf_vmedian(cand_ms, (size_t)runs);
  double rm = lf_vmedian(ref_ms, (size_t)runs);
  double in_bytes = 0, out_bytes = 0;
  lf_vdtype_t peak_dt = LF_VDT_F32;
  for (size_t i = 0; i < w->nin; ++i) {
    in_bytes += (double)w->ins[i].bytes;
    if (!w->ins[i].is_scalar)
      peak_dt = w->ins[i].dtype;
  }
  for (size_t o = 0; o < w->nout; ++o)
    out_bytes += (double)w->outs[o].bytes;
  /* Two floors: the plausibility test's, with a generous peak (a time
   * under it cannot be real), and the roofline the report and the model
   * see, with the unit's dense rate. */
  double peak = lf_vpeak_flops(w->cc_major, w->sms, w->clock_khz, peak_dt);
  double floor_ms =
      lf_vroofline_ms(in_bytes, out_bytes, w->l2_bytes, opt->flops, bw, peak);
  double rpeak =
      lf_vroofline_peak_flops(w->cc_major, w->sms, w->clock_khz, peak_dt);
  double roof_ms =
      lf_vroofline_ms(in_bytes, out_bytes, w->l2_bytes, opt->flops, bw, rpeak);
  cJSON *t = cJSON_AddObjectToObject(verdict, "timing");
  add_num(t, "candidate_ms", cm);
  add_num(t, "reference_ms", rm);
  add_num(t, "speedup", cm > 0 ? rm / cm : 0);
  add_num(t, "candidate_min_ms", cmin);
  add_num(t, "reference_min_ms", rmin);
  cJSON_AddNumberToObject(t, "runs", runs);
  cJSON_AddNumberToObject(t, "warmup_runs", 2);
  cJSON_AddNumberToObject(t, "l2_flush_bytes", (double)w->flush_bytes);
  add_num(t, "measured_bandwidth_gbs", bw / 1e9);
  add_num(t, "peak_flops", peak);
  add_num(t, "dense_peak_flops", rpeak);
  add_num(t, "bytes_in", in_bytes);
  add_num(t, "bytes_out", out_bytes);
  add_num(t, "flops", opt->flops);
  add_num(t, "roofline_ms", floor_ms);
  add_num(t, "dense_roofline_ms", roof_ms);
  if (cm < LF_VROOFLINE_SLACK * floor_ms)
    fail(out, "implausible-time",
         "the candidate's median time %.4f ms is under %.1f x the roofline "
         "floor %.4f ms (%.0f bytes at the measured %.0f GB/s, %.3g FLOPs at "
         "%.0f TFLOP/s): it cannot have done the work",
         cm, LF_VROOFLINE_SLACK, floor_ms, in_bytes + out_bytes, bw / 1e9,
         opt->flops, peak / 1e12);
  else if (opt->min_speedup > 0 && rm / cm < opt->min_speedup)
    fail(out, "slower",
         "the candidate (median %.4f ms) is %.2fx the reference's speed "
         "(median %.4f ms), under the required %.2fx",
         cm, rm / cm, rm, opt->min_speedup);

out_events:
  if (timeout && !s)
    fail(out, "timeout", "a timed run of the candidate passed its deadline");
  if (s && w->sticky) {
    char m[512];
    lf_status_format(s, m, sizeof(m));
    lf_status_free(s);
    s = LF_OK;
    fail(out, "launch-failed", "a timed run failed: %s", m);
  }
  if (!w->sticky)
    for (int i = 0; i < nev; ++i)
      w->drv->cuEventDestroy(ev[i]);
  return s;
}

/* ---- Entry ------------------------------------------------------------ */

/* Reads and checks the truth plan the reference plan names; what cannot be
 * used leaves the upstream plan to judge, with a note (as before the
 * truth existed). */
static void read_truth(worker_t *w, const char *plan_text, size_t plan_size,
                       cJSON **out) {
  lf_strbuf_t text;
  lf_strbuf_init(&text, 64u << 20);
  lf_status_t s = read_json(w->judge.truth_path, out, &text);
  if (s) {
    snprintf(w->judge.note, sizeof(w->judge.note), "the truth plan: %s",
             lf_status_message(s));
    lf_status_free(s);
    w->judge.use_truth = false;
  } else {
    lf_vjudge_check_truth(plan_text, plan_size, lf_strbuf_cstr(&text),
                          lf_strbuf_len(&text), &w->judge);
  }
  lf_strbuf_free(&text);
  if (!w->judge.use_truth) {
    fprintf(stderr, "llm-fuse-verify: %s; the upstream reference judges\n",
            w->judge.note);
    cJSON_Delete(*out);
    *out = NULL;
  }
}

/* Loads the truth plan. A truth whose kernels do not load is dropped (the
 * upstream plan judges); a broken context is an error. */
static lf_status_t load_truth(worker_t *w, const cJSON *truth) {
  char dir[4096], tmp[4096];
  snprintf(tmp, sizeof(tmp), "%s", w->judge.truth_path);
  snprintf(dir, sizeof(dir), "%s", dirname(tmp));
  lf_status_t s = load_plan(w, &w->truth, truth, dir, false);
  if (!s)
    return LF_OK;
  if (w->sticky || lf_status_code(s) == LF_STATUS_RESOURCE_EXHAUSTED)
    return s;
  snprintf(w->judge.note, sizeof(w->judge.note),
           "the truth plan does not load: %s", lf_status_message(s));
  lf_status_free(s);
  fprintf(stderr, "llm-fuse-verify: %s; the upstream reference judges\n",
          w->judge.note);
  w->judge.use_truth = false;
  for (size_t t = 0; t < w->truth.num_temps; ++t)
    w->drv->cuMemFree(w->truth.temps[t]);
  for (size_t k = 0; k < w->truth.num_kernels; ++k)
    if (w->truth.kernels[k].module)
      w->drv->cuModuleUnload(w->truth.kernels[k].module);
  free(w->truth.steps);
  memset(&w->truth, 0, sizeof(w->truth));
  return LF_OK;
}

/* Reads and checks the wide plan the reference plan names; what cannot be
 * used leaves the comparison as it was, with a note. */
static void read_wide(worker_t *w, const char *plan_text, size_t plan_size,
                      cJSON **out) {
  lf_strbuf_t text;
  lf_strbuf_init(&text, 64u << 20);
  lf_status_t s = read_json(w->judge.wide_path, out, &text);
  if (s) {
    snprintf(w->judge.wide_note, sizeof(w->judge.wide_note),
             "the wide plan: %s", lf_status_message(s));
    lf_status_free(s);
    w->judge.use_wide = false;
  } else {
    lf_vjudge_check_wide(plan_text, plan_size, lf_strbuf_cstr(&text),
                         lf_strbuf_len(&text), &w->judge);
  }
  lf_strbuf_free(&text);
  if (!w->judge.use_wide) {
    fprintf(stderr, "llm-fuse-verify: %s; an infinity matches only itself\n",
            w->judge.wide_note);
    cJSON_Delete(*out);
    *out = NULL;
  }
}

/* Loads the wide plan. One whose kernels do not load is dropped (the
 * comparison stays as it was); a broken context is an error. */
static lf_status_t load_wide(worker_t *w, const cJSON *wide) {
  char dir[4096], tmp[4096];
  snprintf(tmp, sizeof(tmp), "%s", w->judge.wide_path);
  snprintf(dir, sizeof(dir), "%s", dirname(tmp));
  w->wide.wide = true;
  lf_status_t s = load_plan(w, &w->wide, wide, dir, false);
  if (!s)
    return LF_OK;
  if (w->sticky || lf_status_code(s) == LF_STATUS_RESOURCE_EXHAUSTED)
    return s;
  snprintf(w->judge.wide_note, sizeof(w->judge.wide_note),
           "the wide plan does not load: %s", lf_status_message(s));
  lf_status_free(s);
  fprintf(stderr, "llm-fuse-verify: %s; an infinity matches only itself\n",
          w->judge.wide_note);
  w->judge.use_wide = false;
  for (size_t t = 0; t < w->wide.num_temps; ++t)
    w->drv->cuMemFree(w->wide.temps[t]);
  for (size_t k = 0; k < w->wide.num_kernels; ++k)
    if (w->wide.kernels[k].module)
      w->drv->cuModuleUnload(w->wide.kernels[k].module);
  free(w->wide.steps);
  memset(&w->wide, 0, sizeof(w->wide));
  return LF_OK;
}

void lf_verify_worker_options_init(lf_verify_worker_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->seed = 1;
  o->trials = 5;
  o->timing = true;
  o->launch_floor_ms = 2000;
  o->launch_factor = 50;
  o->timing_budget_ms = 300;
  o->progress_fd = -1;
}

static void worker_release(worker_t *w) {
  if (!w->drv)
    return;
  if (!w->sticky && w->ctx) {
    w->drv->cuStreamSynchronize(w->stream);
    for (size_t i = 0; i < w->nin; ++i)
      if (w->in && w->in[i])
        w->drv->cuMemFree(w->in[i]);
    for (size_t i = 0; i < w->nin; ++i)
      if (w->sq_in && w->sq_in[i] && sq_owned(w, i))
        w->drv->cuMemFree(w->sq_in[i]);
    for (size_t o = 0; o < w->nout; ++o) {
      if (w->scale_out && w->scale_out[o])
        w->drv->cuMemFree(w->scale_out[o]);
      if (w->ref_out && w->ref_out[o])
        w->drv->cuMemFree(w->ref_out[o]);
      if (w->up_out && w->up_out[o])
        w->drv->cuMemFree(w->up_out[o]);
      if (w->wide_out && w->wide_out[o])
        w->drv->cuMemFree(w->wide_out[o]);
      for (int r = 0; r < 2; ++r)
        if (w->arena[r] && w->arena[r][o])
          w->drv->cuMemFree(w->arena[r][o]);
    }
    for (int k = 0; k < 3; ++k) {
      ref_plan_t *p = k == 2 ? &w->wide : k ? &w->truth : &w->ref;
      for (size_t t = 0; t < p->num_temps; ++t)
        w->drv->cuMemFree(p->temps[t]);
      for (size_t m = 0; m < p->num_kernels; ++m)
        if (p->kernels[m].module)
          w->drv->cuModuleUnload(p->kernels[m].module);
    }
    if (w->scratch)
      w->drv->cuMemFree(w->scratch);
    if (w->flush)
      w->drv->cuMemFree(w->flush);
    if (w->cmod)
      w->drv->cuModuleUnload(w->cmod);
    if (w->helpers)
      w->drv->cuModuleUnload(w->helpers);
    if (w->stream)
      w->drv->cuStreamDestroy(w->stream);
    w->drv->cuDevicePrimaryCtxRelease(w->dev);
  }
  if (!w->sticky)
    lf_cuda_driver_unload(w->drv);
}

lf_status_t lf_verify_worker_run(const lf_verify_worker_options_t *opt,
                                 cJSON **out_verdict, bool *out_sticky) {
  *out_verdict = NULL;
  *out_sticky = false;
  worker_t w_ = {.opt = opt}, *w = &w_;
  double t_start = now_ms();
  cJSON *plan = NULL, *truth = NULL, *wide = NULL, *res = NULL, *verdict = NULL;
  char plan_dir[4096], cand_dir[4096], load_error[1024] = "";
  char tmp[4096];
  snprintf(tmp, sizeof(tmp), "%s", opt->plan_path);
  snprintf(plan_dir, sizeof(plan_dir), "%s", dirname(tmp));
  snprintf(tmp, sizeof(tmp), "%s", opt->candidate_path);
  snprintf(cand_dir, sizeof(cand_dir), "%s", dirname(tmp));

  lf_strbuf_t plan_text;
  lf_strbuf_init(&plan_text, 1);
  lf_status_t s = read_json(opt->plan_path, &plan, &plan_text);
  if (!s)
    lf_vjudge_from_plan(lf_strbuf_cstr(&plan_text), lf_strbuf_len(&plan_text),
                        plan_dir, opt->upstream_reference, &w->judge);
  if (!s && w->judge.use_truth)
    read_truth(w, lf_strbuf_cstr(&plan_text), lf_strbuf_len(&plan_text),
               &truth);
  if (!s && w->judge.use_wide && opt->no_wide_reference) {
    w->judge.use_wide = false;
    snprintf(w->judge.wide_note, sizeof(w->judge.wide_note),
             "--no-wide-reference was asked for");
  }
  if (!s && w->judge.use_wide)
    read_wide(w, lf_strbuf_cstr(&plan_text), lf_strbuf_len(&plan_text), &wide);
  lf_strbuf_free(&plan_text);
  if (!s)
    s = read_json(opt->candidate_path, &res, NULL);
  if (!s)
    s = setup_device(w);
  if (!s)
    s = load_plan(w, &w->ref, plan, plan_dir, true);
  if (!s && w->judge.use_truth)
    s = load_truth(w, truth);
  if (!s && w->judge.use_wide)
    s = load_wide(w, wide);
  if (!s)
    s = load_candidate(w, res, cand_dir, load_error, sizeof(load_error));
  if (!s)
    s = alloc_buffers(w);
  if (s)
    goto out;
  double t_setup = now_ms() - t_start;

  verdict = cJSON_CreateObject();
  if (!verdict) {
    s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out;
  }
  cJSON_AddStringToObject(verdict, "schema", LF_VERDICT_SCHEMA);
  cJSON_AddBoolToObject(verdict, "accepted", false); /* replaced below */
  cJSON_AddStringToObject(verdict, "reason", "");
  cJSON_AddStringToObject(verdict, "message", "");
  cJSON_AddStringToObject(verdict, "subgraph", w->subgraph);
  cJSON_AddStringToObject(verdict, "signature", w->signature);
  cJSON_AddStringToObject(verdict, "kernel", w->kernel_name);
  if (w->judge.named) { /* only plans that accumulate in 16 bits */
    cJSON_AddStringToObject(verdict, "reference", lf_vjudge_name(&w->judge));
    if (w->judge.reason[0])
      cJSON_AddStringToObject(verdict, "reference_reason", w->judge.reason);
    if (w->judge.note[0])
      cJSON_AddStringToObject(verdict, "reference_note", w->judge.note);
  }
  if (w->judge.wide_named) { /* only plans with an f16 result */
    cJSON_AddStringToObject(verdict, "wide_reference",
                            w->judge.use_wide ? "f32-results" : "none");
    if (w->judge.wide_note[0])
      cJSON_AddStringToObject(verdict, "wide_reference_note",
                              w->judge.wide_note);
  }
  cJSON *dev = cJSON_AddObjectToObject(verdict, "device");
  cJSON_AddStringToObject(dev, "name", w->device_name);
  char arch[16];
  snprintf(arch, sizeof(arch), "sm_%d%d", w->cc_major, w->cc_minor);
  cJSON_AddStringToObject(dev, "arch", arch);
  cJSON_AddNumberToObject(dev, "driver_version", w->drv->version);
  cJSON_AddNumberToObject(dev, "l2_bytes", w->l2_bytes);
  cJSON *proto = cJSON_AddObjectToObject(verdict, "protocol");
  add_hex(proto, "base_seed", opt->seed);
  cJSON_AddBoolToObject(proto, "atomics_declared", w->atomics);
  if (w->opt->tf32_k > 0) {
    cJSON_AddStringToObject(proto, "precision", "tf32");
    cJSON_AddNumberToObject(proto, "tf32_k", (double)w->opt->tf32_k);
    add_num(proto, "tf32_scale_tol", lf_vtf32_scale_tol(w->opt->tf32_k));
  }
  if (w->judge.acc32_k > 0) { /* a 16-bit contraction summed in f32 */
    cJSON_AddNumberToObject(proto, "acc32_k", (double)w->judge.acc32_k);
    add_num(proto, "acc32_scale_tol", lf_vacc32_scale_tol(w->judge.acc32_k));
  }
  cJSON_AddStringToObject(proto, "nonfinite",
                          opt->lenient_nonfinite ? "lenient" : "strict");
  cJSON_AddNumberToObject(proto, "red_zone_bytes", RED_ZONE);
  if (w->num_maps)
    cJSON_AddNumberToObject(proto, "tensor_maps", (double)w->num_maps);
  add_num(proto, "launch_limit_floor_ms", opt->launch_floor_ms);
  add_num(proto, "launch_limit_factor", opt->launch_factor);
  cJSON *trials = cJSON_AddArrayToObject(verdict, "trials");

  outcome_t out = {0};
  if (load_error[0]) {
    fail(&out, "load-failed", "the candidate does not load: %s", load_error);
  } else {
    bool float_inputs = false;
    for (size_t i = 0; i < w->nin; ++i)
      float_inputs |=
          !w->ins[i].is_scalar && lf_vdtype_is_float(w->ins[i].dtype);
    lf_vtrial_t sched[64];
    size_t n =
        lf_vtrial_schedule(opt->seed, opt->trials > 56 ? 56 : opt->trials,
                           float_inputs, sched, 64);
    for (size_t i = 0; i < n && !out.reason; ++i) {
      cJSON *rec = cJSON_CreateObject();
      cJSON_AddItemToArray(trials, rec);
      cJSON_AddNumberToObject(rec, "index", sched[i].index);
      s = run_trial(w, &sched[i], rec, &out);
      if (s)
        goto out;
    }
    if (!out.reason && opt->timing) {
      s = run_timing(w, verdict, &out);
      if (s)
        goto out;
    }
  }
  cJSON_ReplaceItemInObject(verdict, "accepted", cJSON_CreateBool(!out.reason));
  cJSON_ReplaceItemInObject(verdict, "reason",
                            cJSON_CreateString(out.reason ? out.reason : "ok"));
  if (!out.reason) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(verdict, "timing");
    const cJSON *sp = t ? cJSON_GetObjectItemCaseSensitive(t, "speedup") : NULL;
    int n = cJSON_GetArraySize(trials);
    char judge[400] = "the reference";
    if (w->judge.use_truth)
      snprintf(judge, sizeof(judge),
               "the %.31s reference (the subgraph %.255s)", w->judge.kind,
               w->judge.reason);
    char boundary[200] = "";
    if (w->boundary_total)
      snprintf(boundary, sizeof(boundary),
               " (%llu element(s) at the overflow boundary judged against "
               "the unrounded f32 result)",
               (unsigned long long)w->boundary_total);
    if (w->acc32_total) {
      size_t used = strlen(boundary);
      snprintf(boundary + used, sizeof(boundary) - used,
               " (%llu ill-conditioned element(s) passed by the "
               "f32-accumulation bound)",
               (unsigned long long)w->acc32_total);
    }
    if (cJSON_IsNumber(sp))
      snprintf(out.message, sizeof(out.message),
               "all %d trials matched %s%s; speed-up over the "
               "reference %.2fx",
               n, judge, boundary, sp->valuedouble);
    else
      snprintf(out.message, sizeof(out.message),
               "all %d trials matched %s%s (not timed)", n, judge, boundary);
  }
  if (w->judge.use_wide)
    cJSON_AddNumberToObject(verdict, "overflow_boundary",
                            (double)w->boundary_total);
  if (w->judge.acc32_k > 0)
    cJSON_AddNumberToObject(verdict, "passed_by_acc32_bound",
                            (double)w->acc32_total);
  cJSON_ReplaceItemInObject(verdict, "message",
                            cJSON_CreateString(out.message));
  if (w->num_maps) /* one per map and buffer it viewed */
    cJSON_AddNumberToObject(proto, "tensor_map_encodes", w->map_encodes);
  cJSON *wk = cJSON_AddObjectToObject(verdict, "worker");
  add_num(wk, "setup_ms", t_setup);
  add_num(wk, "wall_ms", now_ms() - t_start);
  *out_verdict = verdict;
  verdict = NULL;

out:
  *out_sticky = w->sticky;
  cJSON_Delete(verdict);
  cJSON_Delete(plan);
  cJSON_Delete(truth);
  cJSON_Delete(wide);
  cJSON_Delete(res);
  worker_release(w);
  free(w->signature);
  free(w->subgraph);
  free(w->ins);
  free(w->outs);
  free(w->ref.steps);
  free(w->truth.steps);
  free(w->wide.steps);
  free(w->up_out);
  free(w->wide_out);
  free(w->in);
  free(w->scalar);
  free(w->sq_in);
  free(w->sq_scalar);
  free(w->scale_out);
  free(w->ref_out);
  for (int r = 0; r < 2; ++r) {
    free(w->arena[r]);
    free(w->cand[r]);
  }
  free(w->host_scratch);
  return s;
}
