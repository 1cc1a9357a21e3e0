/* verify_worker_tmap_test.c - the verification worker with a candidate
 * that takes tensor maps, against the fake driver (host memory; launches
 * do nothing but are recorded; lf_stats reports a usable reference, so the
 * protocol goes on to the candidate). Each launch of the candidate must
 * get, as its map arguments, 128-byte maps encoded on the buffers of that
 * launch (the two runs of a trial write different poisoned output copies);
 * a map the driver refuses is a "tensor-map" verdict with no launch; a map
 * that does not fit the operand it views is a request error. And, with the
 * same fake, the wide reference's buffer reaching the comparison. */
#include "runtime/verify_worker.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/testing.h"

static void *fake;
static char dir[256];

static int record(int i, unsigned char *out, size_t cap) {
  int (*f)(int, unsigned char *, size_t) =
      (int (*)(int, unsigned char *, size_t))dlsym(fake, "fake_launch_record");
  return f ? f(i, out, cap) : -1;
}

static void put(const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

/* A copy of a 64x64 bf16 input; the reference is one launch. */
static const char plan[] =
    "{\"schema\": \"llm-fuse-reference/0\", \"subgraph\": \"sg_tma\","
    " \"signature\": \"(tensor<64x64xbf16>) -> tensor<64x64xbf16>\","
    " \"temps\": [], \"kernels\": [\"ref\"],"
    " \"steps\": [{\"op\": \"launch\", \"kernel\": \"ref\", \"grid\": [1,1,1],"
    " \"block\": [1,1,1], \"args\": [{\"kind\": \"input\", \"index\": 0,"
    " \"type\": \"ptr\"}, {\"kind\": \"output\", \"index\": 0, \"type\":"
    " \"ptr\"}]}]}";

/* The candidate: the two buffers, then a map of the input (operand 0) and
 * one of the output (operand 1), as the builder's result describes them. */
static void write_candidate(const char *map_dims) {
  char text[2048];
  snprintf(
      text, sizeof(text),
      "{\"ok\": true, \"kernel\": \"cand\", \"grid\": [1,1,1],"
      " \"block\": [128,1,1], \"dynamic_shared_memory\": 0, \"params\": ["
      "{\"role\": \"input\", \"operand\": 0, \"type\": \"memref<64x64xbf16>\"},"
      "{\"role\": \"output\", \"operand\": 0, \"type\": \"memref<64x64xbf16>\"},"
      "{\"role\": \"tensor_map\", \"operand\": 0, \"type\": \"!map\","
      " \"abi\": \"tensor_map\", \"dtype\": \"bf16\", \"dims\": %s,"
      " \"box\": [16, 64], \"swizzle\": \"128b\", \"l2promo\": \"none\","
      " \"oob\": \"zero\", \"interleave\": \"none\"},"
      "{\"role\": \"tensor_map\", \"operand\": 1, \"type\": \"!map\","
      " \"abi\": \"tensor_map\", \"dtype\": \"bf16\", \"dims\": [64, 64],"
      " \"box\": [32, 32], \"swizzle\": \"none\", \"l2promo\": \"128b\","
      " \"oob\": \"nan\", \"interleave\": \"none\"}]}",
      map_dims);
  put("result.json", text);
}

static lf_status_t run(cJSON **verdict) {
  lf_verify_worker_options_t o;
  lf_verify_worker_options_init(&o);
  char p[512], c[512];
  snprintf(p, sizeof(p), "%s/plan.json", dir);
  snprintf(c, sizeof(c), "%s/result.json", dir);
  o.plan_path = p;
  o.candidate_path = c;
  o.timing = false;
  bool sticky;
  return lf_verify_worker_run(&o, verdict, &sticky);
}

static int count_records(void) {
  unsigned char buf[16];
  int n = 0;
  while (record(n, buf, sizeof(buf)) >= 0)
    ++n;
  return n;
}

LF_TEST(each_launch_gets_maps_of_its_own_buffers) {
  write_candidate("[64, 64]");
  int before = count_records();
  cJSON *v = NULL;
  lf_status_t s = run(&v);
  LF_EXPECT(s == LF_OK && v);
  if (s)
    fprintf(stderr, "  %s\n", lf_status_message(s));
  lf_status_free(s);
  if (!v)
    return;
  const cJSON *acc = cJSON_GetObjectItem(v, "accepted");
  const cJSON *reason = cJSON_GetObjectItem(v, "reason");
  LF_EXPECT(cJSON_IsTrue(acc));
  if (!cJSON_IsTrue(acc))
    fprintf(stderr, "  verdict: %s\n", cJSON_PrintUnformatted(v));
  const cJSON *proto = cJSON_GetObjectItem(v, "protocol");
  const cJSON *maps = cJSON_GetObjectItem(proto, "tensor_maps");
  const cJSON *enc = cJSON_GetObjectItem(proto, "tensor_map_encodes");
  LF_EXPECT(cJSON_IsNumber(maps) && maps->valueint == 2);
  (void)reason;

  int n = count_records() - before;
  int trials = cJSON_GetArraySize(cJSON_GetObjectItem(v, "trials"));
  LF_EXPECT(trials >= 5 && n == 2 * trials); /* two runs per trial */
  /* the input's map once (its buffer stays), the output's at every launch
   * (the runs alternate between two poisoned copies) */
  LF_EXPECT(cJSON_IsNumber(enc) && enc->valueint == 1 + n);
  unsigned long long in0 = 0, outs[2] = {0, 0};
  for (int i = 0; i < n; ++i) {
    unsigned char r[8 + 8 + 128 + 128];
    LF_EXPECT(record(before + i, r, sizeof(r)) == (int)sizeof(r));
    unsigned long long in, out, m0[16], m1[16];
    memcpy(&in, r, 8);
    memcpy(&out, r + 8, 8);
    memcpy(m0, r + 16, 128);
    memcpy(m1, r + 144, 128);
    /* each map is the driver's, encoded on this launch's buffer */
    LF_EXPECT(m0[0] == in && !memcmp(&m0[1], "FAKETMAP", 8));
    LF_EXPECT(m1[0] == out && !memcmp(&m1[1], "FAKETMAP", 8));
    /* input map: rank 2, BFLOAT16, SWIZZLE_128B; dims and box reversed */
    LF_EXPECT(m0[2] == (2 | 9ull << 8 | 3ull << 16));
    LF_EXPECT(m0[3] == 64 && m0[4] == 64 && m0[8] == 64 && m0[9] == 16);
    LF_EXPECT(m1[2] == (2 | 9ull << 8) && m1[8] == 32 && m1[9] == 32);
    if (i == 0)
      in0 = in;
    LF_EXPECT(in == in0);
    outs[i % 2] = outs[i % 2] ? outs[i % 2] : out;
    LF_EXPECT(out == outs[i % 2]);
  }
  LF_EXPECT(outs[0] && outs[1] && outs[0] != outs[1]);
  cJSON_Delete(v);
}

LF_TEST(a_map_the_driver_refuses_is_a_verdict_without_a_launch) {
  write_candidate("[64, 64]");
  int before = count_records();
  setenv("FAKE_CUDA_TMAP_ERROR", "1", 1);
  cJSON *v = NULL;
  lf_status_t s = run(&v);
  unsetenv("FAKE_CUDA_TMAP_ERROR");
  LF_EXPECT(s == LF_OK && v);
  lf_status_free(s);
  if (!v)
    return;
  LF_EXPECT(cJSON_IsFalse(cJSON_GetObjectItem(v, "accepted")));
  const cJSON *reason = cJSON_GetObjectItem(v, "reason");
  const cJSON *msg = cJSON_GetObjectItem(v, "message");
  LF_EXPECT(cJSON_IsString(reason) && !strcmp(reason->valuestring, "tensor-map"));
  LF_EXPECT(cJSON_IsString(msg) &&
            strstr(msg->valuestring, "cuTensorMapEncodeTiled") &&
            strstr(msg->valuestring, "was not launched"));
  LF_EXPECT(count_records() == before);
  cJSON_Delete(v);
}

LF_TEST(a_map_that_does_not_fit_its_operand_is_a_request_error) {
  write_candidate("[64, 128]"); /* the input is 64x64 */
  cJSON *v = NULL;
  lf_status_t s = run(&v);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT && !v);
  LF_EXPECT(s && strstr(lf_status_message(s), "does not have the operand's "
                                              "shape"));
  LF_EXPECT(s && strstr(lf_status_message(s), "candidate parameter 2"));
  lf_status_free(s);
  cJSON_Delete(v);
}

/* Not a tensor map: the wide reference (docs/verification.md, "The f16
 * overflow boundary"), against the same fake driver. A plan with an f16
 * result names wide/plan.json (f32 result); every comparison of that
 * output gets the wide plan's f32 buffer and f16's overflow threshold,
 * and without the wide plan (--no-wide-reference) a null buffer. */
static const char plan16[] =
    "{\"schema\": \"llm-fuse-reference/0\", \"subgraph\": \"sg_w\","
    " \"signature\": \"(tensor<64x64xf16>) -> tensor<64x64xf16>\","
    " \"temps\": [], \"kernels\": [\"ref\"],"
    " \"steps\": [{\"op\": \"launch\", \"kernel\": \"ref\", \"grid\": [1,1,1],"
    " \"block\": [1,1,1], \"args\": [{\"kind\": \"input\", \"index\": 0,"
    " \"type\": \"ptr\"}, {\"kind\": \"output\", \"index\": 0, \"type\":"
    " \"ptr\"}]}],"
    " \"wide\": {\"plan\": \"wide/plan.json\", \"kind\": \"f32-results\"}}";
static const char wide16[] =
    "{\"schema\": \"llm-fuse-reference/0\", \"subgraph\": \"sg_w\","
    " \"signature\": \"(tensor<64x64xf16>) -> tensor<64x64xf32>\","
    " \"temps\": [], \"kernels\": [\"wref\"],"
    " \"steps\": [{\"op\": \"launch\", \"kernel\": \"wref\", \"grid\": [1,1,1],"
    " \"block\": [1,1,1], \"args\": [{\"kind\": \"input\", \"index\": 0,"
    " \"type\": \"ptr\"}, {\"kind\": \"output\", \"index\": 0, \"type\":"
    " \"ptr\"}]}, {\"op\": \"copy\", \"args\": [{\"kind\": \"output\","
    " \"index\": 0, \"type\": \"ptr\"}, {\"kind\": \"output\", \"index\": 0,"
    " \"type\": \"ptr\"}]}],"
    " \"wide_results\": {\"kind\": \"f32-results\", \"outputs\": [0]}}";

static void run_wide(bool no_wide, cJSON **v, int *first, int *n) {
  char p[512], c[512], d[512];
  snprintf(d, sizeof(d), "%s/w16/wide", dir);
  mkdir(d, 0700);
  snprintf(p, sizeof(p), "%s/w16/plan.json", dir);
  FILE *f = fopen(p, "w");
  fputs(plan16, f);
  fclose(f);
  snprintf(p, sizeof(p), "%s/w16/wide/plan.json", dir);
  f = fopen(p, "w");
  fputs(wide16, f);
  fclose(f);
  const char *stubs[] = {"w16/ref.ptx", "w16/wide/wref.ptx", "w16/kernel.ptx"};
  for (int i = 0; i < 3; ++i)
    put(stubs[i], "// fake kernel\n");
  put("w16/result.json",
      "{\"ok\": true, \"kernel\": \"cand\", \"grid\": [1,1,1],"
      " \"block\": [128,1,1], \"params\": ["
      "{\"role\": \"input\", \"operand\": 0, \"type\": \"memref<64x64xf16>\"},"
      "{\"role\": \"output\", \"operand\": 0, \"type\": "
      "\"memref<64x64xf16>\"}]}");
  lf_verify_worker_options_t o;
  lf_verify_worker_options_init(&o);
  snprintf(p, sizeof(p), "%s/w16/plan.json", dir);
  snprintf(c, sizeof(c), "%s/w16/result.json", dir);
  o.plan_path = p;
  o.candidate_path = c;
  o.timing = false;
  o.no_wide_reference = no_wide;
  /* lf_compare(r, c, other, n, dt, rtol, atol, poison, lenient, scale,
   * stol, wide, thr, out): its first 13 parameters */
  setenv("FAKE_CUDA_RECORD", "lf_compare:8,8,8,8,4,8,8,8,4,8,8,8,8", 1);
  *first = count_records();
  bool sticky;
  lf_status_t s = lf_verify_worker_run(&o, v, &sticky);
  *n = count_records() - *first;
  setenv("FAKE_CUDA_RECORD", "cand:8,8,128,128", 1);
  LF_EXPECT(s == LF_OK && *v);
  if (s)
    fprintf(stderr, "  %s\n", lf_status_message(s));
  lf_status_free(s);
}

LF_TEST(the_wide_plan_feeds_the_comparison) {
  char d[512];
  snprintf(d, sizeof(d), "%s/w16", dir);
  mkdir(d, 0700);
  for (int no_wide = 0; no_wide < 2; ++no_wide) {
    cJSON *v = NULL;
    int first = 0, n = 0;
    run_wide(no_wide, &v, &first, &n);
    if (!v)
      return;
    LF_EXPECT(cJSON_IsTrue(cJSON_GetObjectItem(v, "accepted")));
    const cJSON *wr = cJSON_GetObjectItem(v, "wide_reference");
    LF_EXPECT(cJSON_IsString(wr) &&
              !strcmp(wr->valuestring, no_wide ? "none" : "f32-results"));
    const cJSON *ob = cJSON_GetObjectItem(v, "overflow_boundary");
    LF_EXPECT(no_wide ? !ob : cJSON_IsNumber(ob) && ob->valueint == 0);
    const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(v, "trials"), 0);
    const cJSON *o0 = cJSON_GetArrayItem(cJSON_GetObjectItem(t0, "outputs"), 0);
    LF_EXPECT(
        no_wide ? !cJSON_GetObjectItem(o0, "overflow_boundary")
                : cJSON_IsNumber(cJSON_GetObjectItem(o0, "overflow_boundary")));
    int trials = cJSON_GetArraySize(cJSON_GetObjectItem(v, "trials"));
    LF_EXPECT(trials >= 5 && n == 2 * trials); /* two runs per trial */
    unsigned long long ref0 = 0;
    for (int i = 0; i < n; ++i) {
      unsigned char r[96];
      LF_EXPECT(record(first + i, r, sizeof(r)) == (int)sizeof(r));
      unsigned long long ref, cand, wide;
      int dt;
      double thr;
      memcpy(&ref, r, 8);
      memcpy(&cand, r + 8, 8);
      memcpy(&dt, r + 32, 4);
      memcpy(&wide, r + 80, 8);
      memcpy(&thr, r + 88, 8);
      LF_EXPECT(dt == 1 && thr == 65520.0); /* f16 */
      /* the wide plan's own buffer, never the reference's or the
       * candidate's; none without it */
      LF_EXPECT(no_wide ? wide == 0 : wide && wide != ref && wide != cand);
      ref0 = ref0 ? ref0 : ref;
      LF_EXPECT(ref == ref0);
    }
    cJSON_Delete(v);
  }
  const char *files[] = {"w16/wide/plan.json", "w16/wide/wref.ptx",
                         "w16/plan.json",      "w16/ref.ptx",
                         "w16/kernel.ptx",     "w16/result.json"};
  for (int i = 0; i < 6; ++i) {
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
    remove(p);
  }
  snprintf(d, sizeof(d), "%s/w16/wide", dir);
  rmdir(d);
  snprintf(d, sizeof(d), "%s/w16", dir);
  rmdir(d);
}

int main(void) {
  snprintf(dir, sizeof(dir), "/tmp/lf_worker_tmap_XXXXXX");
  if (!mkdtemp(dir))
    return 1;
  put("plan.json", plan);
  put("ref.ptx", "// fake reference kernel\n");
  put("kernel.ptx", "// fake candidate kernel\n");
  setenv("LLM_FUSE_LIBCUDA", FAKE_LIBCUDA, 1);
  setenv("FAKE_CUDA_MODULE_ERROR", "0", 1);
  setenv("FAKE_CUDA_LAUNCH_OK", "1", 1);
  setenv("FAKE_CUDA_STATS", "1", 1);
  setenv("FAKE_CUDA_RECORD", "cand:8,8,128,128", 1);
  fake = dlopen(FAKE_LIBCUDA, RTLD_NOW); /* keeps its records */
  LF_EXPECT(fake != NULL);
  if (fake) {
    LF_RUN(each_launch_gets_maps_of_its_own_buffers);
    LF_RUN(a_map_the_driver_refuses_is_a_verdict_without_a_launch);
    LF_RUN(a_map_that_does_not_fit_its_operand_is_a_request_error);
    LF_RUN(the_wide_plan_feeds_the_comparison);
  }
  const char *files[] = {"plan.json", "ref.ptx", "kernel.ptx", "result.json"};
  for (int i = 0; i < 4; ++i) {
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
    remove(p);
  }
  rmdir(dir);
  return lf_test_finish();
}
