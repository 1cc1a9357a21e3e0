/* child_test.c - the kernel build in a child process: success, a real
 * parser crash, a timeout, the process runner on its own, and the result's
 * JSON and repair text; the same through the build server (server.c),
 * two builds at once, and a server that dies (plain children take over).
 * argv[1] is the llm-fuse-build-kernel to run. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/testing.h"
#include "builder/builder.h"
#include "builder/internal.h"

static const char *tool;

static const char *const good_kernel =
    "gpu.module @kernels {\n"
    "  gpu.func @copy(%x: memref<256xf32>, %y: memref<256xf32>) kernel\n"
    "      attributes {known_block_size = array<i32: 256, 1, 1>,\n"
    "                  known_grid_size = array<i32: 1, 1, 1>} {\n"
    "    %tid = gpu.thread_id x\n"
    "    %v = memref.load %x[%tid] : memref<256xf32>\n"
    "    memref.store %v, %y[%tid] : memref<256xf32>\n"
    "    gpu.return\n"
    "  }\n"
    "}\n";

static const char *const signature = "(tensor<256xf32>) -> tensor<256xf32>";

static lf_build_request_t request(const char *text) {
  lf_build_request_t r = {0};
  r.kernel_text = text;
  r.kernel_size = strlen(text);
  r.signature = signature;
  r.skip_cubin = true;
  return r;
}

LF_TEST(success) {
  lf_build_request_t req = request(good_kernel);
  lf_build_limits_t limits = {.tool_path = tool};
  lf_build_result_t *r = NULL;
  lf_status_t s = lf_build_kernel(&req, &limits, &r);
  LF_EXPECT(s == NULL);
  LF_EXPECT(r && r->kind == LF_BUILD_OK);
  if (r && r->kind == LF_BUILD_OK) {
    LF_EXPECT_STREQ(r->kernel_name, "copy");
    LF_EXPECT_STREQ(r->chip, "sm_90");
    LF_EXPECT(r->ptx && strstr(r->ptx, ".visible .entry copy("));
    LF_EXPECT(r->ptx_size == strlen(r->ptx));
    LF_EXPECT(r->cubin == NULL);
    LF_EXPECT(r->block[0] == 256 && r->block[1] == 1 && r->grid[0] == 1);
    LF_EXPECT(r->num_params == 2);
    if (r->num_params == 2) {
      LF_EXPECT(!r->params[0].is_output && r->params[1].is_output);
      LF_EXPECT_STREQ(r->params[1].type, "memref<256xf32>");
    }
    LF_EXPECT(r->ms_total > 0);
  }
  lf_status_free(s);
  lf_build_result_destroy(r);
}

/* 100000 nested arrays overflow MLIR's recursive parser: a real SIGSEGV in
 * the child; this process must survive and report a crash. */
LF_TEST(crash) {
  size_t depth = 100000;
  const char *head = "gpu.module @kernels attributes {x = ";
  const char *tail = "} {}\n";
  size_t n = strlen(head) + 2 * depth + strlen(tail);
  char *text = malloc(n + 1);
  LF_EXPECT(text != NULL);
  if (!text)
    return;
  char *p = text;
  p += sprintf(p, "%s", head);
  memset(p, '[', depth);
  memset(p + depth, ']', depth);
  p += 2 * depth;
  sprintf(p, "%s", tail);
  lf_build_request_t req = request(text);
  lf_build_limits_t limits = {.tool_path = tool};
  lf_build_result_t *r = NULL;
  lf_status_t s = lf_build_kernel(&req, &limits, &r);
  LF_EXPECT(s == NULL);
  LF_EXPECT(r && r->kind == LF_BUILD_CRASH);
  if (r) {
    LF_EXPECT(strstr(r->message, "SIGSEGV") != NULL);
    LF_EXPECT(strstr(r->message, "during parse") != NULL);
    LF_EXPECT(r->hint && r->hint[0]);
    LF_EXPECT(r->ptx == NULL);
  }
  lf_status_free(s);
  lf_build_result_destroy(r);
  free(text);
}

LF_TEST(timeout) {
  lf_build_request_t req = request(good_kernel);
  lf_build_limits_t limits = {.tool_path = tool, .timeout_ms = 1};
  lf_build_result_t *r = NULL;
  lf_status_t s = lf_build_kernel(&req, &limits, &r);
  LF_EXPECT(s == NULL);
  LF_EXPECT(r && r->kind == LF_BUILD_TIMEOUT);
  if (r)
    LF_EXPECT(strstr(r->message, "ran past its 1 ms limit") != NULL);
  lf_status_free(s);
  lf_build_result_destroy(r);
}

LF_TEST(missing_tool) {
  lf_build_request_t req = request(good_kernel);
  lf_build_limits_t limits = {.tool_path =
                                  "/nonexistent/llm-fuse-build-kernel"};
  lf_build_result_t *r = NULL;
  lf_status_t s = lf_build_kernel(&req, &limits, &r);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_NOT_FOUND);
  LF_EXPECT(r == NULL);
  lf_status_free(s);
}

LF_TEST(bad_signature_is_a_status) {
  lf_build_request_t req = request(good_kernel);
  req.signature = "(tensor<?xf32>) -> tensor<?xf32>";
  lf_build_limits_t limits = {.tool_path = tool};
  lf_build_result_t *r = NULL;
  lf_status_t s = lf_build_kernel(&req, &limits, &r);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INTERNAL);
  LF_EXPECT(strstr(lf_status_message(s), "static ranked tensors") != NULL);
  LF_EXPECT(r == NULL);
  lf_status_free(s);
}

LF_TEST(subprocess_signal_exit_timeout) {
  lf_subprocess_outcome_t o;
  const char *abrt[] = {"/bin/sh", "-c", "kill -ABRT $$", NULL};
  lf_subprocess_t spec = {.argv = abrt, .timeout_ms = 10000};
  LF_EXPECT(lf_subprocess_run(&spec, &o) == NULL);
  LF_EXPECT(o.signaled && o.signal == SIGABRT && !o.timed_out);

  const char *exit3[] = {"/bin/sh", "-c", "exit 3", NULL};
  spec.argv = exit3;
  LF_EXPECT(lf_subprocess_run(&spec, &o) == NULL);
  LF_EXPECT(!o.signaled && !o.timed_out && o.exit_code == 3);

  /* The deadline kills the whole group, grandchildren included. */
  const char *hang[] = {"/bin/sh", "-c", "sleep 30 & sleep 30; wait", NULL};
  spec.argv = hang;
  spec.timeout_ms = 200;
  LF_EXPECT(lf_subprocess_run(&spec, &o) == NULL);
  LF_EXPECT(o.timed_out && o.ms >= 200 && o.ms < 5000);

  /* Limits apply in the child, which reports them. */
  char out[] = "/tmp/lf_child_test.XXXXXX";
  int fd = mkstemp(out);
  LF_EXPECT(fd >= 0);
  if (fd < 0)
    return;
  close(fd);
  const char *limits[] = {"/bin/sh", "-c", "ulimit -v; ulimit -t; ulimit -c",
                          NULL};
  spec.argv = limits;
  spec.output_path = out;
  spec.timeout_ms = 10000;
  spec.memory_bytes = 64ll << 20;
  spec.cpu_seconds = 7;
  LF_EXPECT(lf_subprocess_run(&spec, &o) == NULL);
  LF_EXPECT(!o.signaled && o.exit_code == 0);
  lf_strbuf_t text;
  lf_strbuf_init(&text, 4096);
  LF_EXPECT(lf_read_file(out, &text) == NULL);
  LF_EXPECT_STREQ(lf_strbuf_cstr(&text), "65536\n7\n0\n");
  lf_strbuf_free(&text);
  unlink(out);
}

LF_TEST(json_round_trip_and_repair_cap) {
  lf_build_result_t *r = lf_build_result_new();
  LF_EXPECT(r != NULL);
  if (!r)
    return;
  LF_EXPECT(lf_build_result_fail(r, LF_BUILD_CONTRACT, "[x] %s", "bad") ==
            NULL);
  char big[8192];
  memset(big, 'd', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  LF_EXPECT(lf_set_capped(&r->diagnostics, big, LF_BUILD_DIAGNOSTICS_CAP) ==
            NULL);
  LF_EXPECT(strlen(r->diagnostics) < LF_BUILD_DIAGNOSTICS_CAP);
  char *json = NULL;
  LF_EXPECT(lf_build_result_to_json(r, NULL, NULL, &json) == NULL);
  lf_build_result_t *back = NULL;
  LF_EXPECT(json &&
            lf_build_result_from_json(json, strlen(json), &back) == NULL);
  if (back) {
    LF_EXPECT(back->kind == LF_BUILD_CONTRACT);
    LF_EXPECT_STREQ(back->message, "[x] bad");
    LF_EXPECT_STREQ(back->diagnostics, r->diagnostics);
  }
  lf_strbuf_t text;
  lf_strbuf_init(&text, 1 << 16);
  LF_EXPECT(lf_build_result_repair_text(r, &text) == NULL);
  LF_EXPECT(lf_strbuf_len(&text) > 0 &&
            lf_strbuf_len(&text) <= LF_BUILD_REPAIR_CAP);
  LF_EXPECT(strncmp(lf_strbuf_cstr(&text), "Build failed (contract): [x] bad",
                    32) == 0);
  lf_strbuf_free(&text);
  lf_build_result_destroy(back);
  lf_build_result_destroy(r);
  free(json);
  lf_build_result_destroy(NULL);

  lf_build_result_t *bad = NULL;
  lf_status_t s = lf_build_result_from_json("{\"kind\": \"nope\"}", 16, &bad);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT && !bad);
  lf_status_free(s);
}

/* A tensor-map param survives the JSON the child hands back, field by
 * field; ordinary params keep their four fields; a malformed map entry is
 * rejected rather than half read. */
LF_TEST(json_tensor_map_round_trip) {
  lf_build_result_t *r = lf_build_result_new();
  LF_EXPECT(r != NULL);
  if (!r)
    return;
  r->kernel_name = strdup("k");
  r->chip = strdup("sm_90a");
  r->params = calloc(2, sizeof(*r->params));
  r->num_params = 2;
  r->params[0].is_pointer = true;
  r->params[0].type = strdup("memref<100x4096xbf16>");
  lf_kernel_param_t *p = &r->params[1];
  p->is_tensor_map = true;
  p->operand = 0;
  p->type = strdup("!nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, "
                   "3>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob "
                   "= nan, interleave = none>");
  p->map = (lf_tensor_map_spec_t){.param = 0,
                                  .rank = 2,
                                  .dtype = "bf16",
                                  .dims = {100, 4096},
                                  .box = {64, 64},
                                  .swizzle_bytes = 128,
                                  .l2promo_bytes = 256,
                                  .oob_nan = true};
  char *json = NULL;
  LF_EXPECT(lf_build_result_to_json(r, NULL, NULL, &json) == NULL);
  LF_EXPECT(json && strstr(json, "\"role\":\t\"tensor_map\""));
  LF_EXPECT(json && strstr(json, "\"dims\":\t[100, 4096]"));
  LF_EXPECT(json && strstr(json, "\"swizzle\":\t\"128b\""));
  lf_build_result_t *back = NULL;
  LF_EXPECT(json &&
            lf_build_result_from_json(json, strlen(json), &back) == NULL);
  if (back && back->num_params == 2) {
    const lf_kernel_param_t *b0 = &back->params[0], *b1 = &back->params[1];
    LF_EXPECT(!b0->is_tensor_map && b0->is_pointer && !b0->is_output);
    LF_EXPECT(b1->is_tensor_map && !b1->is_pointer && b1->operand == 0);
    LF_EXPECT_STREQ(b1->type, p->type);
    LF_EXPECT(b1->map.param == 0 && b1->map.rank == 2);
    LF_EXPECT_STREQ(b1->map.dtype, "bf16");
    LF_EXPECT(b1->map.dims[0] == 100 && b1->map.dims[1] == 4096);
    LF_EXPECT(b1->map.box[0] == 64 && b1->map.box[1] == 64);
    LF_EXPECT(b1->map.swizzle_bytes == 128 && b1->map.l2promo_bytes == 256);
    LF_EXPECT(b1->map.oob_nan);
  } else {
    LF_EXPECT(!"two params read back");
  }
  lf_build_result_destroy(back);
  back = NULL;

  /* Each broken field on its own: rank mismatch, box > 256, bad swizzle. */
  const char *bad[] = {"\"box\":\t[64, 64]",     "\"box\":\t[64]",
                       "\"box\":\t[64, 64]",     "\"box\":\t[64, 512]",
                       "\"swizzle\":\t\"128b\"", "\"swizzle\":\t\"96b\""};
  for (size_t i = 0; json && i < 6; i += 2) {
    const char *at = strstr(json, bad[i]);
    LF_EXPECT(at != NULL);
    if (!at)
      continue;
    lf_strbuf_t b;
    lf_strbuf_init(&b, 1 << 16);
    LF_EXPECT(lf_strbuf_append(&b, json, (size_t)(at - json)) == NULL);
    LF_EXPECT(lf_strbuf_append_str(&b, bad[i + 1]) == NULL);
    LF_EXPECT(lf_strbuf_append_str(&b, at + strlen(bad[i])) == NULL);
    lf_status_t s =
        lf_build_result_from_json(lf_strbuf_cstr(&b), lf_strbuf_len(&b), &back);
    LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT && !back);
    lf_status_free(s);
    lf_strbuf_free(&b);
  }
  free(json);
  lf_build_result_destroy(r);
}

LF_TEST(find_tool) {
  /* This test lives in <build>/builder, the tool in <build>/bin: found
   * through ../bin beside the binary that holds the library. */
  unsetenv("LLM_FUSE_BUILD_KERNEL");
  char *path = NULL;
  lf_status_t s = lf_build_find_tool(&path);
  LF_EXPECT(s == NULL);
  LF_EXPECT(path && strstr(path, "/bin/llm-fuse-build-kernel") != NULL);
  free(path);
  path = NULL;
  setenv("LLM_FUSE_BUILD_KERNEL", tool, 1);
  LF_EXPECT(lf_build_find_tool(&path) == NULL);
  LF_EXPECT_STREQ(path, tool);
  free(path);
  path = NULL;
  setenv("LLM_FUSE_BUILD_KERNEL", "/nonexistent/tool", 1);
  s = lf_build_find_tool(&path);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_NOT_FOUND && path == NULL);
  lf_status_free(s);
  unsetenv("LLM_FUSE_BUILD_KERNEL");
}

/* 32768 inlined expf calls: a build of tens of seconds (lit_tests/builder/
 * Inputs/slow.mlir). */
static const char *const slow_kernel =
    "gpu.module @kernels {\n"
    "  gpu.func @k(%x: memref<1024xf32>, %y: memref<1024xf32>) kernel\n"
    "      attributes {known_block_size = array<i32: 1, 1, 1>,\n"
    "                  known_grid_size = array<i32: 1, 1, 1>} {\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %l = vector.load %x[%c0] : memref<1024xf32>, vector<1024xf32>\n"
    "    %b = vector.broadcast %l : vector<1024xf32> to vector<32x1024xf32>\n"
    "    %e = math.exp %b : vector<32x1024xf32>\n"
    "    %s = arith.mulf %e, %b : vector<32x1024xf32>\n"
    "    %sc = vector.shape_cast %s : vector<32x1024xf32> to "
    "vector<32768xf32>\n"
    "    %r = vector.reduction <add>, %sc : vector<32768xf32> into f32\n"
    "    memref.store %r, %y[%c0] : memref<1024xf32>\n"
    "    gpu.return\n"
    "  }\n"
    "}\n";

static const char *const slow_signature =
    "(tensor<1024xf32>) -> tensor<1024xf32>";

/* The tests above went through the server: it is up, and it served them
 * (none fell back). */
LF_TEST(server_served_the_builds) {
  int served = 0, fallbacks = 0, pid = 0;
  lf_build_server_stats(&served, &fallbacks, &pid);
  LF_EXPECT(served >= 4); /* success, crash, timeout, bad signature */
  LF_EXPECT(fallbacks == 0);
  LF_EXPECT(pid > 0 && kill(pid, 0) == 0);
}

/* A build past its deadline in the server: kind timeout with the same
 * message, killed near the deadline (not after the build's tens of
 * seconds), and the server serves the next build. */
LF_TEST(server_deadline) {
  int before = 0;
  lf_build_server_stats(&before, NULL, NULL);
  lf_build_request_t req = request(slow_kernel);
  req.signature = slow_signature;
  lf_build_limits_t limits = {.tool_path = tool, .timeout_ms = 1000};
  lf_build_result_t *r = NULL;
  double t0 = lf_now_ms();
  lf_status_t s = lf_build_kernel(&req, &limits, &r);
  double ms = lf_now_ms() - t0;
  LF_EXPECT(s == NULL);
  LF_EXPECT(r && r->kind == LF_BUILD_TIMEOUT);
  if (r)
    LF_EXPECT(strstr(r->message, "ran past its 1000 ms limit (during ") !=
              NULL);
  LF_EXPECT(ms >= 1000 && ms < 4000);
  lf_status_free(s);
  lf_build_result_destroy(r);
  int after = 0, fallbacks = 0;
  lf_build_server_stats(&after, &fallbacks, NULL);
  LF_EXPECT(after == before + 1 && fallbacks == 0);

  /* The CPU limit ends the build the same way in the server and in a
   * plain child: SIGXCPU at RLIMIT_CPU's soft limit (the hard one is a
   * second later), reported as the CPU limit, not as a crash. */
  limits.timeout_ms = 30000;
  limits.cpu_seconds = 1;
  lf_build_result_t *rs[2] = {NULL, NULL};
  for (int i = 0; i < 2; ++i) {
    if (i == 1)
      setenv("LLM_FUSE_BUILD_SERVER", "0", 1);
    s = lf_build_kernel(&req, &limits, &rs[i]);
    LF_EXPECT(s == NULL && rs[i] != NULL);
    lf_status_free(s);
  }
  unsetenv("LLM_FUSE_BUILD_SERVER");
  if (rs[0] && rs[1]) {
    LF_EXPECT(rs[0]->kind == rs[1]->kind);
    LF_EXPECT(rs[0]->kind == LF_BUILD_TIMEOUT);
    /* The stage it reached may differ: the plain child's CPU time includes
     * its ~85 ms of start-up. */
    const char *same = "the kernel build ran past its 1 s CPU limit (during ";
    LF_EXPECT(strncmp(rs[0]->message, same, strlen(same)) == 0);
    LF_EXPECT(strncmp(rs[1]->message, same, strlen(same)) == 0);
  }
  lf_build_result_destroy(rs[0]);
  lf_build_result_destroy(rs[1]);
}

typedef struct pair_arg_s {
  const char *text;
  lf_build_result_t *r;
  lf_status_t s;
} pair_arg_t;

static void *build_thread(void *p) {
  pair_arg_t *a = p;
  lf_build_request_t req = request(a->text);
  lf_build_limits_t limits = {.tool_path = tool};
  a->s = lf_build_kernel(&req, &limits, &a->r);
  return NULL;
}

/* Two builds at once (the pass runs two): each its own fork, each its own
 * result; a crash in one leaves the other whole. */
LF_TEST(server_two_at_once) {
  int before = 0;
  lf_build_server_stats(&before, NULL, NULL);
  char *deep = malloc(300000);
  LF_EXPECT(deep != NULL);
  if (!deep)
    return;
  char *p = deep + sprintf(deep, "gpu.module @kernels attributes {x = ");
  memset(p, '[', 100000);
  memset(p + 100000, ']', 100000);
  sprintf(p + 200000, "} {}\n");
  pair_arg_t a[3] = {
      {good_kernel, NULL, NULL}, {deep, NULL, NULL}, {good_kernel, NULL, NULL}};
  pthread_t th[3];
  for (int i = 0; i < 3; ++i)
    LF_EXPECT(pthread_create(&th[i], NULL, build_thread, &a[i]) == 0);
  for (int i = 0; i < 3; ++i)
    pthread_join(th[i], NULL);
  for (int i = 0; i < 3; ++i)
    LF_EXPECT(a[i].s == NULL && a[i].r != NULL);
  if (a[0].r && a[2].r && a[1].r) {
    LF_EXPECT(a[0].r->kind == LF_BUILD_OK && a[2].r->kind == LF_BUILD_OK);
    LF_EXPECT_STREQ(a[0].r->ptx, a[2].r->ptx);
    LF_EXPECT(a[1].r->kind == LF_BUILD_CRASH);
    LF_EXPECT(strstr(a[1].r->message, "SIGSEGV during parse") != NULL);
  }
  for (int i = 0; i < 3; ++i) {
    lf_status_free(a[i].s);
    lf_build_result_destroy(a[i].r);
  }
  free(deep);
  int after = 0, fallbacks = 0;
  lf_build_server_stats(&after, &fallbacks, NULL);
  LF_EXPECT(after == before + 3 && fallbacks == 0);
}

/* LLM_FUSE_BUILD_SERVER=0: a plain child, as before the server. */
LF_TEST(server_off) {
  int before = 0;
  lf_build_server_stats(&before, NULL, NULL);
  setenv("LLM_FUSE_BUILD_SERVER", "0", 1);
  lf_build_request_t req = request(good_kernel);
  lf_build_limits_t limits = {.tool_path = tool};
  lf_build_result_t *r = NULL;
  lf_status_t s = lf_build_kernel(&req, &limits, &r);
  unsetenv("LLM_FUSE_BUILD_SERVER");
  LF_EXPECT(s == NULL && r && r->kind == LF_BUILD_OK);
  LF_EXPECT(r && r->ms_cpu > 0);
  lf_status_free(s);
  lf_build_result_destroy(r);
  int after = 0, fallbacks = 0;
  lf_build_server_stats(&after, &fallbacks, NULL);
  LF_EXPECT(after == before && fallbacks == 0);
}

/* The server killed: the next build still succeeds, in a plain child, and
 * the server is not used again. Run last. */
LF_TEST(server_death_falls_back) {
  int served = 0, fallbacks = 0, pid = 0;
  lf_build_server_stats(&served, &fallbacks, &pid);
  LF_EXPECT(pid > 0);
  if (pid <= 0)
    return;
  LF_EXPECT(kill(pid, SIGKILL) == 0);
  for (int i = 0; i < 200 && kill(pid, 0) == 0; ++i)
    usleep(10000); /* until init has reaped it */
  lf_build_request_t req = request(good_kernel);
  lf_build_limits_t limits = {.tool_path = tool};
  for (int round = 0; round < 2; ++round) {
    lf_build_result_t *r = NULL;
    lf_status_t s = lf_build_kernel(&req, &limits, &r);
    LF_EXPECT(s == NULL && r && r->kind == LF_BUILD_OK);
    lf_status_free(s);
    lf_build_result_destroy(r);
  }
  int served2 = 0, fallbacks2 = 0, pid2 = 0;
  lf_build_server_stats(&served2, &fallbacks2, &pid2);
  LF_EXPECT(served2 == served);
  LF_EXPECT(fallbacks2 == fallbacks + 1); /* the first noticed, once */
  LF_EXPECT(pid2 == 0);

  /* A crash still is a crash in a plain child. */
  lf_build_request_t bad = request(slow_kernel);
  bad.signature = slow_signature;
  limits.timeout_ms = 500;
  lf_build_result_t *r = NULL;
  lf_status_t s = lf_build_kernel(&bad, &limits, &r);
  LF_EXPECT(s == NULL && r && r->kind == LF_BUILD_TIMEOUT);
  lf_status_free(s);
  lf_build_result_destroy(r);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PATH/TO/llm-fuse-build-kernel\n", argv[0]);
    return 2;
  }
  tool = argv[1];
  LF_RUN(success);
  LF_RUN(crash);
  LF_RUN(timeout);
  LF_RUN(missing_tool);
  LF_RUN(bad_signature_is_a_status);
  LF_RUN(subprocess_signal_exit_timeout);
  LF_RUN(json_round_trip_and_repair_cap);
  LF_RUN(json_tensor_map_round_trip);
  LF_RUN(find_tool);
  LF_RUN(server_served_the_builds);
  LF_RUN(server_deadline);
  LF_RUN(server_two_at_once);
  LF_RUN(server_off);
  LF_RUN(server_death_falls_back);
  return lf_test_finish();
}
