/* verify_worker_tmap_test.c - the verification worker with a candidate
 * that takes tensor maps, against the fake driver (host memory; launches
 * do nothing but are recorded; lf_stats reports a usable reference, so the
 * protocol goes on to the candidate). Each launch of the candidate must
 * get, as its map arguments, 128-byte maps encoded on the buffers of that
 * launch (the two runs of a trial write different poisoned output copies);
 * a map the driver refuses is a "tensor-map" verdict with no launch; a map
 * that does not fit the operand it views is a request error. */
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
