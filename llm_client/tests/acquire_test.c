/* acquire_test.c - the acquire loop against a real HTTP server on loopback.
 *
 * Each case writes a script for tests/kernel_server.py (which replies each
 * subgraph's requests in order: good, broken, good-if-error, ...), starts
 * it, runs lf_acquire_run() with a build callback that rejects any kernel
 * holding the token BROKEN with an error naming E_MARKER_42, stops the
 * server and checks the report against the server's request log: attempt
 * counts, what reached the server, budgets, concurrency, timings.
 */
#include <cjson/cJSON.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/testing.h"
#include "llm_client/acquire.h"
#include "llm_client/cache.h"
#include "llm_client/prompt.h"
#include "llm_client/table.h"
#include "llm_client/tests/loopback_server.h"

static lf_test_server_t server = {.pid = -1, .stdin_fd = -1};
static char base_url[64];
static char tmp_root[256];
static char log_path[512];
static int case_id;

static long mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Starts the server with `config` (JSON text). */
static bool start_server(const char *config) {
  char cfg[512];
  ++case_id;
  snprintf(cfg, sizeof(cfg), "%s/config%d.json", tmp_root, case_id);
  snprintf(log_path, sizeof(log_path), "%s/log%d.jsonl", tmp_root, case_id);
  FILE *f = fopen(cfg, "w");
  if (!f)
    return false;
  fputs(config, f);
  fclose(f);
  char *argv[] = {LF_PYTHON3, LF_KERNEL_SERVER, cfg, log_path, NULL};
  if (!lf_test_server_start(&server, argv))
    return false;
  snprintf(base_url, sizeof(base_url), "%s", server.base_url);
  return true;
}

static void stop_server(void) { lf_test_server_stop(&server); }

/* The server's log as an array of request objects (caller frees). */
static cJSON *server_log(void) {
  cJSON *all = cJSON_CreateArray();
  lf_strbuf_t b;
  lf_strbuf_init(&b, 64u << 20);
  lf_status_t s = lf_read_file(log_path, &b);
  lf_status_free(s);
  const char *p = lf_strbuf_cstr(&b);
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    cJSON *item = cJSON_ParseWithLength(p, n);
    if (item)
      cJSON_AddItemToArray(all, item);
    p += n + (nl ? 1 : 0);
  }
  lf_strbuf_free(&b);
  return all;
}

/* Requests of rule `match` in the log. */
static int requests_of(cJSON *log, const char *match) {
  int n = 0;
  const cJSON *r;
  cJSON_ArrayForEach(r, log) {
    const cJSON *rule = cJSON_GetObjectItem(r, "rule");
    if (cJSON_IsString(rule) && strcmp(rule->valuestring, match) == 0)
      ++n;
  }
  return n;
}

/* The last user message of the k-th request of `match` ("" if none). */
static const char *last_user_of(cJSON *log, const char *match, int k) {
  const cJSON *r;
  cJSON_ArrayForEach(r, log) {
    const cJSON *rule = cJSON_GetObjectItem(r, "rule");
    const cJSON *n = cJSON_GetObjectItem(r, "n");
    if (!cJSON_IsString(rule) || strcmp(rule->valuestring, match) != 0 ||
        (int)n->valuedouble != k)
      continue;
    const cJSON *msgs = cJSON_GetObjectItem(r, "messages");
    const char *last = "";
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
      if (strcmp(cJSON_GetObjectItem(m, "role")->valuestring, "user") == 0)
        last = cJSON_GetObjectItem(m, "content")->valuestring;
    }
    return last;
  }
  return "";
}

/* ---- Tasks and the fake builder ------------------------------------------*/

#define MAX_TASKS 16
static char names[MAX_TASKS][32], fps[MAX_TASKS][65];
static lf_acquire_task_t tasks[MAX_TASKS];
static atomic_int builds;

static void make_tasks(size_t n) {
  for (size_t i = 0; i < n; ++i) {
    snprintf(fps[i], sizeof(fps[i]), "%016zx%048d", 0xa0a0a0a0a0a0a0a0 + i, 0);
    snprintf(names[i], sizeof(names[i]), "sg_%.16s", fps[i]);
    tasks[i] = (lf_acquire_task_t){
        .name = names[i],
        .fingerprint = fps[i],
        .klass = "reduction",
        .ir = "func.func private @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
              "  return %a : tensor<4xf32>\n}\n",
        .signature = "(tensor<4xf32>) -> tensor<4xf32>",
        .arch = "sm_90",
    };
  }
}

static lf_status_t fake_build(const lf_acquire_task_t *task, const char *kernel,
                              size_t line_offset, void *user,
                              lf_acquire_build_t *out) {
  (void)task, (void)user;
  atomic_fetch_add(&builds, 1);
  const char *bad = strstr(kernel, "BROKEN");
  if (!bad) {
    out->ok = true;
    out->ptx = strdup("// ptx");
    return LF_OK;
  }
  size_t line = line_offset + 1;
  for (const char *p = kernel; p < bad; ++p)
    line += *p == '\n';
  char text[256];
  snprintf(text, sizeof(text),
           "verify: reply:%zu:5: error: E_MARKER_42 use of undeclared SSA "
           "value\n  | // BROKEN",
           line);
  out->repair_text = strdup(text);
  return LF_OK;
}

static lf_acquire_options_t options(void) {
  lf_acquire_options_t o;
  lf_acquire_options_init(&o);
  o.provider = LF_PROVIDER_OPENAI;
  o.client.base_url = base_url;
  o.client.api_key_env = "LF_ACQUIRE_TEST_KEY";
  o.client.backoff_base_ms = 10;
  o.model = "test-model";
  o.build = fake_build;
  return o;
}

static lf_acquire_report_t *run(size_t n, const lf_acquire_options_t *o) {
  lf_acquire_report_t *r = NULL;
  lf_status_t s = lf_acquire_run(tasks, n, o, &r);
  if (s) {
    fprintf(stderr, "lf_acquire_run: %s\n", lf_status_message(s));
    lf_status_free(s);
  }
  return r;
}

/* ---- The closed loop: a fake verifier
 * --------------------------------------*/

/* Judges a kernel by the markers kernel_server.py writes into it: WRONG is a
 * mismatch, UNJUDGED cannot be judged, FAKE_MS X verifies at X ms; the
 * fallback takes 10 ms and the roofline floor is 1 ms. At most one
 * evaluation runs at a time (one GPU queue); each takes eval_sleep_ms. */
static atomic_int evals, evals_running, evals_overlap;
static int eval_sleep_ms;
static pthread_mutex_t gpu = PTHREAD_MUTEX_INITIALIZER;

static lf_status_t fake_eval(const lf_acquire_task_t *task, void *artifact,
                             void *user, lf_acquire_eval_t *out) {
  (void)task, (void)user;
  const char *kernel = artifact;
  pthread_mutex_lock(&gpu);
  if (atomic_fetch_add(&evals_running, 1) > 0)
    atomic_fetch_add(&evals_overlap, 1);
  atomic_fetch_add(&evals, 1);
  if (eval_sleep_ms)
    usleep((useconds_t)eval_sleep_ms * 1000);
  atomic_fetch_sub(&evals_running, 1);
  pthread_mutex_unlock(&gpu);
  out->fallback_ms = 10;
  out->roofline_ms = 1;
  out->roofline_basis = strdup("1 MB at 1000 GB/s");
  if (strstr(kernel, "UNJUDGED")) {
    out->unjudged = true;
    out->reason = strdup("no-reference");
    out->feedback = strdup("the reference could not be built");
    return LF_OK;
  }
  if (strstr(kernel, "WRONG")) {
    out->reason = strdup("mismatch");
    out->feedback = strdup(
        "verification rejected the kernel: mismatch\n- output 0 (f32, 4, 4 "
        "elements): 3 element(s) wrong; first wrong at flat index 1: got 2, "
        "want 1 E_VERIFY_77");
    return LF_OK;
  }
  const char *ms = strstr(kernel, "FAKE_MS ");
  out->accepted = true;
  out->reason = strdup("ok");
  out->time_ms = ms ? atof(ms + 8) : 5.0;
  return LF_OK;
}

/* The artifact is a copy of the kernel text: what fake_eval reads. */
static lf_status_t text_build(const lf_acquire_task_t *task, const char *kernel,
                              size_t line_offset, void *user,
                              lf_acquire_build_t *out) {
  LF_RETURN_IF_ERROR(fake_build(task, kernel, line_offset, user, out));
  if (out->ok)
    out->artifact = strdup(kernel);
  return LF_OK;
}

static atomic_int released;
static void text_release(void *artifact, void *user) {
  (void)user;
  atomic_fetch_add(&released, 1);
  free(artifact);
}

static lf_acquire_options_t loop_options(int max_refinements) {
  lf_acquire_options_t o = options();
  o.build = text_build;
  o.evaluate = fake_eval;
  o.release = text_release;
  o.max_refinements = max_refinements;
  atomic_store(&evals, 0);
  atomic_store(&evals_overlap, 0);
  eval_sleep_ms = 0;
  return o;
}

static lf_acquire_report_t *run_script(const char *replies, int refinements,
                                       int max_attempts, cJSON **out_log) {
  make_tasks(1);
  char cfg[512];
  snprintf(cfg, sizeof(cfg),
           "{\"rules\":[{\"match\":\"%s\",\"replies\":[%s]}]}", names[0],
           replies);
  if (!start_server(cfg))
    return NULL;
  lf_acquire_options_t o = loop_options(refinements);
  o.max_attempts = max_attempts;
  lf_acquire_report_t *r = run(1, &o);
  stop_server();
  *out_log = server_log();
  return r;
}

static const char *kept_text(const lf_acquire_report_t *r) {
  return r && r->results[0].artifact ? r->results[0].artifact : "";
}

LF_TEST(loop_wrong_then_right) {
  cJSON *log = NULL;
  lf_acquire_report_t *r = run_script("\"wrong\",\"ms:4\"", 0, 4, &log);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[0].evaluated && r->results[0].eval.accepted);
  LF_EXPECT(r && r->results[0].eval.time_ms == 4);
  LF_EXPECT(r && r->results[0].attempt_count == 2);
  LF_EXPECT(r && r->results[0].attempts[0].outcome == LF_ATTEMPT_REJECTED);
  LF_EXPECT(r && strcmp(lf_acquire_attempt_stage(&r->results[0].attempts[0]),
                        "verify") == 0);
  LF_EXPECT(r && r->results[0].attempts[1].kind == LF_REQUEST_REPAIR);
  LF_EXPECT(r && r->results[0].attempts[1].outcome == LF_ATTEMPT_VERIFIED);
  LF_EXPECT(r && r->results[0].attempts[1].kept);
  LF_EXPECT(strstr(kept_text(r), "FAKE_MS 4"));
  /* The mismatch went back to the model as a repair. */
  const char *repair = last_user_of(log, names[0], 1);
  LF_EXPECT(strstr(repair, "E_VERIFY_77"));
  LF_EXPECT(strstr(repair, "Attempt 1 of 4 failed"));
  LF_EXPECT(r && strstr(r->results[0].attempts[0].feedback, "E_VERIFY_77"));
  LF_EXPECT(r && r->results[0].attempts[1].feedback[0] == '\0');
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

LF_TEST(loop_slow_then_faster) {
  cJSON *log = NULL;
  atomic_store(&released, 0);
  lf_acquire_report_t *r = run_script("\"ms:8\",\"ms:4\",\"ms:2\"", 2, 4, &log);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[0].requests == 3 && r->results[0].refinements == 2);
  LF_EXPECT(r && r->results[0].eval.time_ms == 2);
  LF_EXPECT(r && r->results[0].attempts[2].kept);
  LF_EXPECT(r && !r->results[0].attempts[0].kept);
  LF_EXPECT(strstr(kept_text(r), "FAKE_MS 2"));
  /* The two slower kernels were released. */
  LF_EXPECT(atomic_load(&released) == 2);
  /* The refinement requests carry the time, the fallback, the floor. */
  const char *r1 = last_user_of(log, names[0], 1);
  LF_EXPECT(strstr(r1, "Speed round 1 of 2"));
  LF_EXPECT(strstr(r1, "fastest verified kernel so far: 8 ms"));
  LF_EXPECT(strstr(r1, "fallback (the default MLIR lowering): 10 ms"));
  LF_EXPECT(strstr(r1, "roofline floor: 1 ms (1 MB at 1000 GB/s)"));
  LF_EXPECT(strstr(r1, "reaches 12.5%"));
  LF_EXPECT(strstr(r1, "passed verification and ran in 8 ms"));
  const char *r2 = last_user_of(log, names[0], 2);
  LF_EXPECT(strstr(r2, "Speed round 2 of 2"));
  LF_EXPECT(strstr(r2, "so far: 4 ms"));
  LF_EXPECT(r && r->results[0].attempts[1].kind == LF_REQUEST_REFINE);
  LF_EXPECT(r && strstr(r->results[0].attempts[0].feedback, "Speed round 1"));
  char *json = NULL;
  lf_status_free(lf_acquire_report_to_json(r, tasks, false, &json));
  LF_EXPECT(json && strstr(json, "\"stage\":\t\"refine\""));
  LF_EXPECT(json && strstr(json, "\"roofline_fraction\":\t0.5"));
  free(json);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

LF_TEST(loop_faster_but_wrong_never_replaces) {
  cJSON *log = NULL;
  lf_acquire_report_t *r =
      run_script("\"ms:8\",\"wrong\",\"ms:9\"", 2, 4, &log);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[0].eval.time_ms == 8);
  LF_EXPECT(strstr(kept_text(r), "FAKE_MS 8"));
  LF_EXPECT(r && r->results[0].attempts[0].kept);
  LF_EXPECT(r && r->results[0].attempts[1].outcome == LF_ATTEMPT_REJECTED);
  LF_EXPECT(r && r->results[0].attempts[2].outcome == LF_ATTEMPT_VERIFIED);
  LF_EXPECT(r && !r->results[0].attempts[2].kept);
  /* The failed refinement's error reached the model, with the best time. */
  const char *r2 = last_user_of(log, names[0], 2);
  LF_EXPECT(strstr(r2, "E_VERIFY_77"));
  LF_EXPECT(strstr(r2, "stays in place"));
  LF_EXPECT(strstr(r2, "so far: 8 ms"));
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

LF_TEST(loop_refinement_that_fails_to_build) {
  cJSON *log = NULL;
  lf_acquire_report_t *r = run_script("\"ms:8\",\"broken\"", 1, 4, &log);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[0].eval.accepted &&
            r->results[0].eval.time_ms == 8);
  LF_EXPECT(r && r->results[0].attempt_count == 2);
  LF_EXPECT(r && r->results[0].attempts[1].outcome == LF_ATTEMPT_BUILD_FAILED);
  LF_EXPECT(requests_of(log, names[0]) == 2);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

LF_TEST(loop_that_never_converges) {
  cJSON *log = NULL;
  lf_acquire_report_t *r = run_script("\"wrong\"", 2, 3, &log);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_REJECTED);
  LF_EXPECT(r && r->results[0].requests == 3);
  LF_EXPECT(r && r->results[0].evaluated && !r->results[0].eval.accepted);
  LF_EXPECT(r && strcmp(r->results[0].eval.reason, "mismatch") == 0);
  LF_EXPECT(r && strstr(r->results[0].message, "no kernel passed verification "
                                               "in 3"));
  LF_EXPECT(r && r->results[0].attempts[2].kept);
  LF_EXPECT(requests_of(log, names[0]) == 3);
  LF_EXPECT(strstr(last_user_of(log, names[0], 2), "Attempt 2 of 3 failed"));
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

LF_TEST(loop_stops_near_the_roofline) {
  cJSON *log = NULL;
  /* 1.05 ms against a 1 ms floor: 95%, within 10%: no refinement. */
  lf_acquire_report_t *r = run_script("\"ms:1.05\",\"ms:1\"", 2, 4, &log);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[0].requests == 1);
  LF_EXPECT(requests_of(log, names[0]) == 1);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

LF_TEST(loop_unjudged_ends_without_feedback) {
  cJSON *log = NULL;
  lf_acquire_report_t *r = run_script("\"unjudged\",\"ms:1\"", 2, 4, &log);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[0].evaluated && r->results[0].eval.unjudged);
  LF_EXPECT(r && r->results[0].attempts[0].outcome == LF_ATTEMPT_UNJUDGED);
  LF_EXPECT(requests_of(log, names[0]) == 1);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

LF_TEST(loop_tunes_declared_variants) {
  cJSON *log = NULL;
  /* BLOCK 256, 64, 128: FAKE_MS BLOCK/32 = 8, 2, 4: the fastest is 64. */
  lf_acquire_report_t *r = run_script("\"tuned:256,64,128\"", 0, 4, &log);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[0].candidates == 3);
  LF_EXPECT(r && r->results[0].attempt_count == 3);
  LF_EXPECT(r && r->results[0].eval.time_ms == 2);
  LF_EXPECT(strstr(kept_text(r), "FAKE_MS 2"));
  LF_EXPECT(r && strcmp(r->results[0].attempts[1].variant, "BLOCK=64") == 0);
  LF_EXPECT(r && r->results[0].attempts[1].kept);
  LF_EXPECT(r && r->results[0].attempts[1].request == 1);
  LF_EXPECT(atomic_load(&evals) == 3);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

/* A build that takes build_sleep_ms and notes whether an evaluation was
 * running meanwhile (a build ahead, acquire.c). */
static int build_sleep_ms;
static atomic_int builds_during_eval;

static lf_status_t slow_text_build(const lf_acquire_task_t *task,
                                   const char *kernel, size_t line_offset,
                                   void *user, lf_acquire_build_t *out) {
  bool overlap = atomic_load(&evals_running) > 0;
  usleep((useconds_t)build_sleep_ms * 1000);
  if (overlap || atomic_load(&evals_running) > 0)
    atomic_fetch_add(&builds_during_eval, 1);
  return text_build(task, kernel, line_offset, user, out);
}

/* Variant v + 1 builds while v is evaluated; the result is the one built
 * one after the other (attempts in order, the same kept variant), every
 * artifact released or kept. no_build_ahead turns it off. */
LF_TEST(loop_builds_ahead) {
  for (int off = 0; off < 2; ++off) {
    make_tasks(1);
    char cfg[256];
    snprintf(cfg, sizeof(cfg),
             "{\"rules\":[{\"match\":\"%s\",\"replies\":"
             "[\"tuned:256,64,128\"]}]}",
             names[0]);
    LF_EXPECT(start_server(cfg));
    lf_acquire_options_t o = loop_options(0);
    o.build = slow_text_build;
    o.build_concurrency = 2;
    o.no_build_ahead = off;
    eval_sleep_ms = 150;
    build_sleep_ms = 100;
    atomic_store(&builds_during_eval, 0);
    atomic_store(&released, 0);
    lf_acquire_report_t *r = run(1, &o);
    stop_server();
    cJSON *log = server_log();
    LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
    LF_EXPECT(r && r->results[0].candidates == 3);
    LF_EXPECT(r && r->results[0].attempt_count == 3);
    LF_EXPECT(r && r->results[0].eval.time_ms == 2);
    LF_EXPECT(r && strcmp(r->results[0].attempts[0].variant, "BLOCK=256") == 0);
    LF_EXPECT(r && strcmp(r->results[0].attempts[1].variant, "BLOCK=64") == 0);
    LF_EXPECT(r && strcmp(r->results[0].attempts[2].variant, "BLOCK=128") == 0);
    LF_EXPECT(r && r->results[0].attempts[1].kept);
    LF_EXPECT(r && r->results[0].attempts[2].build_ms >= 100);
    LF_EXPECT(atomic_load(&evals) == 3);
    LF_EXPECT(atomic_load(&released) == 2); /* the kept one stays */
    if (off)
      LF_EXPECT(atomic_load(&builds_during_eval) == 0);
    else
      LF_EXPECT(atomic_load(&builds_during_eval) == 2);
    cJSON_Delete(log);
    lf_acquire_report_destroy(r);
  }
  eval_sleep_ms = 0;
}

LF_TEST(loop_budget_keeps_the_best_verified) {
  make_tasks(1);
  char cfg[256];
  snprintf(cfg, sizeof(cfg),
           "{\"rules\":[{\"match\":\"%s\",\"replies\":[\"ms:8\",\"ms:4\","
           "\"ms:2\"]}]}",
           names[0]);
  LF_EXPECT(start_server(cfg));
  lf_acquire_options_t o = loop_options(2);
  o.max_requests = 2; /* the second refinement is never asked */
  lf_acquire_report_t *r = run(1, &o);
  stop_server();
  cJSON *log = server_log();
  LF_EXPECT(cJSON_GetArraySize(log) == 2);
  LF_EXPECT(r && r->exhausted == LF_BUDGET_REQUESTS);
  /* The budget ran out during refinement: the best kernel stays. */
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[0].eval.accepted &&
            r->results[0].eval.time_ms == 4);
  LF_EXPECT(strstr(kept_text(r), "FAKE_MS 4"));
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

LF_TEST(loop_requests_overlap_verification) {
  /* 8 subgraphs, 0.5 s per reply, 0.1 s per verification on one queue:
   * pipelined, about 0.5 + 8 x 0.1 s; 8 serial round trips would be 4.8 s. */
  make_tasks(8);
  LF_EXPECT(start_server("{\"rules\":[{\"match\":\"*\",\"delay\":0.5,"
                         "\"replies\":[\"ms:5\"]}]}"));
  lf_acquire_options_t o = loop_options(0);
  eval_sleep_ms = 100;
  long t0 = mono_ms();
  lf_acquire_report_t *r = run(8, &o);
  long took = mono_ms() - t0;
  stop_server();
  LF_EXPECT(took >= 1200 && took < 2800);
  LF_EXPECT(atomic_load(&evals) == 8);
  for (size_t i = 0; r && i < 8; ++i)
    LF_EXPECT(r->results[i].outcome == LF_ACQUIRE_OK &&
              r->results[i].eval.accepted);
  lf_acquire_report_destroy(r);
}

/* ---- Cases ---------------------------------------------------------------*/

LF_TEST(repair_loop_fixes_a_broken_kernel) {
  make_tasks(1);
  char cfg[256];
  snprintf(cfg, sizeof(cfg),
           "{\"rules\":[{\"match\":\"%s\",\"replies\":[\"good-if-error\"],"
           "\"usage\":[1000,200]}]}",
           names[0]);
  LF_EXPECT(start_server(cfg));
  lf_acquire_options_t o = options();
  lf_acquire_report_t *r = run(1, &o);
  stop_server();
  cJSON *log = server_log();
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[0].attempt_count == 2);
  LF_EXPECT(r && r->results[0].attempts[0].outcome == LF_ATTEMPT_BUILD_FAILED);
  LF_EXPECT(r && !r->results[0].attempts[0].repair);
  LF_EXPECT(r && r->results[0].attempts[1].repair);
  LF_EXPECT(r && r->results[0].attempts[1].outcome == LF_ATTEMPT_BUILT);
  LF_EXPECT(r && r->results[0].attempts[1].prompt_tokens == 1000);
  LF_EXPECT(r && strstr(r->results[0].kernel, "gpu.module"));
  LF_EXPECT(r && strcmp(r->results[0].provider, "openai") == 0);
  LF_EXPECT(r && r->requests == 2 && r->rounds == 2);
  LF_EXPECT(r && r->prompt_tokens == 2000 && r->completion_tokens == 400);
  LF_EXPECT(requests_of(log, names[0]) == 2);
  /* The build error reached the server in the repair prompt, with the line
   * of the reply it points at, and the previous reply came back too. */
  const char *repair = last_user_of(log, names[0], 1);
  LF_EXPECT(strstr(repair, "E_MARKER_42"));
  LF_EXPECT(strstr(repair, "reply:6:5"));
  LF_EXPECT(strstr(repair, "Attempt 1 of 4 failed"));
  LF_EXPECT(!strstr(last_user_of(log, names[0], 0), "E_MARKER_42"));
  char *json = NULL;
  lf_status_free(lf_acquire_report_to_json(r, tasks, false, &json));
  LF_EXPECT(json && strstr(json, "\"outcome\":\t\"ok\""));
  LF_EXPECT(json && strstr(json, "\"kind\":\t\"repair\""));
  free(json);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

LF_TEST(max_attempts_exhausted) {
  make_tasks(1);
  char cfg[256];
  snprintf(cfg, sizeof(cfg),
           "{\"rules\":[{\"match\":\"%s\",\"replies\":[\"broken\"]}]}",
           names[0]);
  LF_EXPECT(start_server(cfg));
  lf_acquire_options_t o = options();
  o.max_attempts = 3;
  lf_acquire_report_t *r = run(1, &o);
  stop_server();
  cJSON *log = server_log();
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_FAILED);
  LF_EXPECT(r && r->results[0].attempt_count == 3);
  LF_EXPECT(r && r->results[0].kernel == NULL);
  LF_EXPECT(r && strstr(r->results[0].message, "no kernel built in 3"));
  LF_EXPECT(r && strstr(r->results[0].message, "E_MARKER_42"));
  LF_EXPECT(requests_of(log, names[0]) == 3);
  LF_EXPECT(strstr(last_user_of(log, names[0], 2), "Attempt 2 of 3 failed"));
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

LF_TEST(hostile_replies_become_repairs_or_errors) {
  make_tasks(3);
  char cfg[512];
  snprintf(cfg, sizeof(cfg),
           "{\"rules\":[{\"match\":\"%s\",\"replies\":[\"none\",\"good\"]},"
           "{\"match\":\"%s\",\"replies\":[\"two\",\"good\"]},"
           "{\"match\":\"%s\",\"replies\":[\"http401\"]}]}",
           names[0], names[1], names[2]);
  LF_EXPECT(start_server(cfg));
  lf_acquire_options_t o = options();
  lf_acquire_report_t *r = run(3, &o);
  stop_server();
  cJSON *log = server_log();
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[0].attempts[0].outcome == LF_ATTEMPT_NO_KERNEL);
  LF_EXPECT(strstr(last_user_of(log, names[0], 1), "reply has no gpu.module"));
  LF_EXPECT(r && r->results[1].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(strstr(last_user_of(log, names[1], 1), "exactly one is required"));
  /* A 401 is not repaired: the provider is unusable, the ops stay. */
  LF_EXPECT(r && r->results[2].outcome == LF_ACQUIRE_UNAVAILABLE);
  LF_EXPECT(r && r->results[2].attempt_count == 1);
  LF_EXPECT(r && r->results[2].attempts[0].http_code == 401);
  LF_EXPECT(r && strstr(r->results[2].message, "HTTP 401"));
  LF_EXPECT(requests_of(log, names[2]) == 1);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

LF_TEST(request_budget_runs_out_mid_module) {
  make_tasks(4);
  char cfg[1024];
  snprintf(cfg, sizeof(cfg),
           "{\"rules\":[{\"match\":\"%s\",\"replies\":[\"good\"]},"
           "{\"match\":\"%s\",\"replies\":[\"good\"]},"
           "{\"match\":\"%s\",\"replies\":[\"broken\"]},"
           "{\"match\":\"%s\",\"replies\":[\"broken\"]}]}",
           names[0], names[1], names[2], names[3]);
  LF_EXPECT(start_server(cfg));
  lf_acquire_options_t o = options();
  o.max_requests = 5; /* 4 first requests, then one of the two repairs */
  lf_acquire_report_t *r = run(4, &o);
  stop_server();
  cJSON *log = server_log();
  LF_EXPECT(cJSON_GetArraySize(log) == 5);
  LF_EXPECT(r && r->requests == 5);
  LF_EXPECT(r && r->exhausted == LF_BUDGET_REQUESTS);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[1].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[2].outcome == LF_ACQUIRE_BUDGET);
  LF_EXPECT(r && r->results[2].budget == LF_BUDGET_REQUESTS);
  LF_EXPECT(r && r->results[3].outcome == LF_ACQUIRE_BUDGET);
  /* The loops run concurrently: which of the two got the fifth request is
   * not fixed, but exactly one did. */
  LF_EXPECT(r &&
            r->results[2].attempt_count + r->results[3].attempt_count == 3);
  LF_EXPECT(r && strstr(r->results[2].message, "request budget"));
  LF_EXPECT(r && strstr(r->results[3].message, "request budget"));
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

LF_TEST(token_budget_runs_out_mid_module) {
  make_tasks(3);
  char cfg[1024];
  snprintf(cfg, sizeof(cfg),
           "{\"rules\":[{\"match\":\"%s\",\"replies\":[\"good\"],"
           "\"usage\":[800,200]},"
           "{\"match\":\"*\",\"replies\":[\"broken\"],\"usage\":[800,200]}]}",
           names[0]);
  LF_EXPECT(start_server(cfg));
  lf_acquire_options_t o = options();
  o.max_tokens = 2500;
  o.max_concurrency = 1; /* one loop at a time: a fixed order */
  lf_acquire_report_t *r = run(3, &o);
  stop_server();
  cJSON *log = server_log();
  /* sg0 spends 1000 and ends; sg1 spends 1000, repairs (2000 < 2500) and
   * spends 1000 more; then 3000 >= 2500 stops sg1 and sg2 before asking. */
  LF_EXPECT(cJSON_GetArraySize(log) == 3);
  LF_EXPECT(r && r->exhausted == LF_BUDGET_TOKENS);
  LF_EXPECT(r && r->prompt_tokens + r->completion_tokens == 3000);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[1].outcome == LF_ACQUIRE_BUDGET);
  LF_EXPECT(r && r->results[1].budget == LF_BUDGET_TOKENS);
  LF_EXPECT(r && r->results[1].attempt_count == 2);
  LF_EXPECT(r && r->results[2].budget == LF_BUDGET_TOKENS);
  LF_EXPECT(r && r->results[2].attempt_count == 0);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

LF_TEST(wall_budget_cuts_requests_in_flight) {
  make_tasks(3);
  char cfg[1024];
  snprintf(cfg, sizeof(cfg),
           "{\"rules\":[{\"match\":\"%s\",\"replies\":[\"good\"]},"
           "{\"match\":\"*\",\"delay\":3,\"replies\":[\"good\"]}]}",
           names[0]);
  LF_EXPECT(start_server(cfg));
  lf_acquire_options_t o = options();
  o.max_wall_ms = 800;
  long t0 = mono_ms();
  lf_acquire_report_t *r = run(3, &o);
  long took = mono_ms() - t0;
  stop_server();
  LF_EXPECT(took >= 700 && took < 2000);
  LF_EXPECT(r && r->exhausted == LF_BUDGET_WALL);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[1].outcome == LF_ACQUIRE_BUDGET);
  LF_EXPECT(r && r->results[1].budget == LF_BUDGET_WALL);
  LF_EXPECT(r && r->results[1].attempts[0].outcome == LF_ATTEMPT_BUDGET);
  LF_EXPECT(r && r->results[2].budget == LF_BUDGET_WALL);
  lf_acquire_report_destroy(r);
}

LF_TEST(wall_budget_between_rounds) {
  make_tasks(2);
  LF_EXPECT(start_server("{\"rules\":[{\"match\":\"*\",\"delay\":0.3,"
                         "\"replies\":[\"broken\"]}]}"));
  lf_acquire_options_t o = options();
  o.max_attempts = 20;
  o.max_wall_ms = 1000;
  lf_acquire_report_t *r = run(2, &o);
  stop_server();
  LF_EXPECT(r && r->exhausted == LF_BUDGET_WALL);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_BUDGET);
  LF_EXPECT(r && r->results[1].outcome == LF_ACQUIRE_BUDGET);
  /* 0.3 s per round: three or four rounds fit (two on a loaded machine),
   * never twenty. */
  LF_EXPECT(r && r->rounds >= 2 && r->rounds <= 5);
  LF_EXPECT(r && r->wall_ms < 2500);
  lf_acquire_report_destroy(r);
}

LF_TEST(requests_run_concurrently_within_the_cap) {
  make_tasks(6);
  LF_EXPECT(start_server("{\"rules\":[{\"match\":\"*\",\"delay\":0.5,"
                         "\"replies\":[\"good\"]}]}"));
  lf_acquire_options_t o = options();
  o.max_concurrency = 3;
  o.build_concurrency = 3;
  atomic_store(&builds, 0);
  lf_acquire_report_t *r = run(6, &o);
  stop_server();
  cJSON *log = server_log();
  int max_inflight = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, log) {
    int n = (int)cJSON_GetObjectItem(e, "inflight")->valuedouble;
    if (n > max_inflight)
      max_inflight = n;
  }
  LF_EXPECT(max_inflight == 3);
  LF_EXPECT(cJSON_GetArraySize(log) == 6);
  LF_EXPECT(atomic_load(&builds) == 6);
  /* Two waves of 0.5 s, not six. */
  LF_EXPECT(r && r->wall_ms >= 900 && r->wall_ms < 2200);
  for (size_t i = 0; r && i < 6; ++i)
    LF_EXPECT(r->results[i].outcome == LF_ACQUIRE_OK);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
}

LF_TEST(record_then_replay_round_trip) {
  make_tasks(2);
  char cfg[512], rec[512], cache_dir[512];
  snprintf(cfg, sizeof(cfg),
           "{\"rules\":[{\"match\":\"%s\",\"replies\":[\"broken\","
           "\"good\"],\"usage\":[10,5]},{\"match\":\"*\",\"replies\":"
           "[\"good\"]}]}",
           names[0]);
  snprintf(rec, sizeof(rec), "%s/record", tmp_root);
  snprintf(cache_dir, sizeof(cache_dir), "%s/cache-rt", tmp_root);
  LF_EXPECT(start_server(cfg));
  lf_acquire_options_t o = options();
  o.record_dir = rec;
  lf_acquire_report_t *r1 = run(2, &o);
  stop_server();
  LF_EXPECT(r1 && r1->results[0].outcome == LF_ACQUIRE_OK &&
            r1->results[0].attempt_count == 2);
  /* Replay: no server at all, the same kernels after the same attempts. */
  lf_acquire_options_t p = options();
  p.provider = LF_PROVIDER_REPLAY;
  p.replay_dir = rec;
  p.replay_strict = true;
  p.offline = true;
  p.client.base_url = "http://127.0.0.1:9/v1";
  lf_acquire_report_t *r2 = run(2, &p);
  for (size_t i = 0; r1 && r2 && i < 2; ++i) {
    LF_EXPECT(r2->results[i].outcome == LF_ACQUIRE_OK);
    LF_EXPECT(r2->results[i].attempt_count == r1->results[i].attempt_count);
    LF_EXPECT_STREQ(r2->results[i].kernel, r1->results[i].kernel);
    LF_EXPECT_STREQ(r2->results[i].provider, "openai");
    LF_EXPECT_STREQ(r2->results[i].model, "test-model");
  }
  LF_EXPECT(r2 && r2->results[0].attempts[0].prompt_tokens == 10);
  /* A miss: a subgraph never recorded. */
  make_tasks(3);
  lf_acquire_report_t *r3 = run(3, &p);
  LF_EXPECT(r3 && r3->results[2].outcome == LF_ACQUIRE_UNAVAILABLE);
  LF_EXPECT(r3 && strstr(r3->results[2].message, "no recorded exchange"));
  /* Strict replay refuses an entry recorded for another request. */
  p.model = "other-model";
  lf_acquire_report_t *r4 = run(1, &p);
  LF_EXPECT(r4 && r4->results[0].outcome == LF_ACQUIRE_UNAVAILABLE);
  LF_EXPECT(r4 && strstr(r4->results[0].message, "another request"));
  lf_acquire_report_destroy(r1);
  lf_acquire_report_destroy(r2);
  lf_acquire_report_destroy(r3);
  lf_acquire_report_destroy(r4);
}

/* The RMSNorm subgraph of the shipped replay set. */
static lf_acquire_task_t shipped_rmsnorm_task(void) {
  return (lf_acquire_task_t){
      .name = "sg_07f0dc6cb70576f3",
      .fingerprint =
          "07f0dc6cb70576f34ddea627009be4572873bf958823d09424676466554e8ecb",
      .klass = "reduction",
      .ir = "func.func private @sg_07f0dc6cb70576f3() { return }",
      .signature = "(tensor<16384x4096xbf16>, tensor<4096xbf16>) -> "
                   "tensor<16384x4096xbf16>",
      .arch = "sm_90a",
  };
}

LF_TEST(shipped_replay_set_answers_offline) {
  lf_acquire_task_t t = shipped_rmsnorm_task();
  lf_acquire_options_t o;
  lf_acquire_options_init(&o);
  o.offline = true;
  o.build = fake_build;
  lf_acquire_report_t *r = NULL;
  lf_status_t s = lf_acquire_run(&t, 1, &o, &r);
  LF_EXPECT(!s);
  lf_status_free(s);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && strstr(r->results[0].kernel, "gpu.func @rmsnorm_bf16_4096"));
  LF_EXPECT(r && strcmp(r->results[0].provider, "handwritten") == 0);
  lf_acquire_report_destroy(r);
}

/* The offline default where a GPU verifies: the shipped kernel is
 * verified, and the refinement the recording does not hold is neither
 * asked nor counted. */
LF_TEST(shipped_replay_set_with_a_verifier_ends_after_its_recording) {
  lf_acquire_task_t t = shipped_rmsnorm_task();
  lf_acquire_options_t o = loop_options(2);
  o.provider = LF_PROVIDER_REPLAY;
  o.offline = true;
  lf_acquire_report_t *r = NULL;
  lf_status_t s = lf_acquire_run(&t, 1, &o, &r);
  LF_EXPECT(!s);
  lf_status_free(s);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[0].eval.accepted);
  LF_EXPECT(r && r->results[0].requests == 1 && r->results[0].refinements == 0);
  LF_EXPECT(r && r->results[0].attempt_count == 1 && r->requests == 1);
  LF_EXPECT(r && r->results[0].attempts[0].kept);
  LF_EXPECT(r && r->results[0].attempts[0].feedback[0] == '\0');
  LF_EXPECT(r && strstr(r->results[0].message, "no further refinement"));
  lf_acquire_report_destroy(r);
}

LF_TEST(provider_none_and_offline_openai_never_ask) {
  make_tasks(2);
  LF_EXPECT(start_server("{\"rules\":[{\"match\":\"*\",\"replies\":"
                         "[\"good\"]}]}"));
  lf_acquire_options_t o = options();
  o.provider = LF_PROVIDER_NONE;
  lf_acquire_report_t *r = run(2, &o);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_SKIPPED);
  LF_EXPECT(r && r->requests == 0);
  lf_acquire_report_destroy(r);
  o = options();
  o.offline = true;
  r = run(2, &o);
  LF_EXPECT(r && r->results[1].outcome == LF_ACQUIRE_UNAVAILABLE);
  LF_EXPECT(r && strstr(r->results[1].message, "offline"));
  lf_acquire_report_destroy(r);
  stop_server();
  cJSON *log = server_log();
  LF_EXPECT(cJSON_GetArraySize(log) == 0);
  cJSON_Delete(log);
}

LF_TEST(cache_hit_skips_the_provider_and_offline_uses_it) {
  make_tasks(2);
  char dir[512];
  snprintf(dir, sizeof(dir), "%s/cache", tmp_root);
  lf_cache_t *cache = NULL;
  lf_status_free(lf_cache_open(dir, NULL, &cache));
  LF_EXPECT(start_server("{\"rules\":[{\"match\":\"*\",\"replies\":"
                         "[\"good\"]}]}"));
  lf_acquire_options_t o = options();
  o.cache = cache;
  o.toolchain = "llvm-22;test";
  lf_acquire_report_t *r1 = run(2, &o);
  LF_EXPECT(r1 && r1->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r1 && strlen(r1->results[0].cache_digest) == 64);
  o.offline = true;
  lf_acquire_report_t *r2 = run(2, &o);
  stop_server();
  cJSON *log = server_log();
  LF_EXPECT(cJSON_GetArraySize(log) == 2); /* the first run only */
  LF_EXPECT(r2 && r2->results[0].outcome == LF_ACQUIRE_CACHED);
  LF_EXPECT(r2 && r2->results[0].cache_entry &&
            strcmp(r2->results[0].cache_entry->ptx, "// ptx") == 0);
  LF_EXPECT(r1 && r2 &&
            strcmp(r1->results[1].kernel, r2->results[1].kernel) == 0);
  LF_EXPECT(r2 && r2->requests == 0);
  /* Another model is another key: a miss, and offline says so. */
  o.model = "another";
  lf_acquire_report_t *r3 = run(1, &o);
  LF_EXPECT(r3 && r3->results[0].outcome == LF_ACQUIRE_UNAVAILABLE);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r1);
  lf_acquire_report_destroy(r2);
  lf_acquire_report_destroy(r3);
  lf_cache_close(cache);
}

LF_TEST(echoed_key_is_redacted_everywhere) {
  make_tasks(1);
  static const char key[] = "sk-canary-acquire-5e1f0c2d9b8a7";
  setenv("LF_ACQUIRE_TEST_KEY", key, 1);
  char rec[512], dir[512];
  snprintf(rec, sizeof(rec), "%s/record-canary", tmp_root);
  snprintf(dir, sizeof(dir), "%s/cache-canary", tmp_root);
  lf_cache_options_t co;
  lf_cache_options_init(&co);
  co.api_key_env = "LF_ACQUIRE_TEST_KEY";
  lf_cache_t *cache = NULL;
  lf_status_free(lf_cache_open(dir, &co, &cache));
  LF_EXPECT(start_server("{\"rules\":[{\"match\":\"*\",\"replies\":"
                         "[\"echo-auth\"]}]}"));
  lf_acquire_options_t o = options();
  o.record_dir = rec;
  o.cache = cache;
  o.toolchain = "t";
  lf_acquire_report_t *r = run(1, &o);
  stop_server();
  cJSON *log = server_log();
  const cJSON *first = cJSON_GetArrayItem(log, 0);
  LF_EXPECT(first && cJSON_IsTrue(cJSON_GetObjectItem(first, "auth_present")));
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && strstr(r->results[0].kernel, "[REDACTED]"));
  LF_EXPECT(r && !strstr(r->results[0].kernel, key));
  char *json = NULL;
  lf_status_free(lf_acquire_report_to_json(r, tasks, true, &json));
  LF_EXPECT(json && !strstr(json, key));
  free(json);
  /* Nothing under the record or cache folders holds it. */
  char cmd[1200];
  snprintf(cmd, sizeof(cmd), "grep -rqF -- '%s' '%s' '%s'", key, rec, dir);
  LF_EXPECT(system(cmd) != 0);
  snprintf(cmd, sizeof(cmd), "grep -rqF -- '[REDACTED]' '%s'", rec);
  LF_EXPECT(system(cmd) == 0);
  unsetenv("LF_ACQUIRE_TEST_KEY");
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
  lf_cache_close(cache);
}

/* ---- Adapt requests from the pattern table -------------------------------*/

#define ADAPT_KEY                                                              \
  "abcd000000000000000000000000000000000000000000000000000000000007"
static const int64_t adapt_sizes[2] = {2048, 1000};

/* Writes one entry of ADAPT_KEY for sm_90 under <tmp_root>/<name>/v1/ and
 * opens that folder as a table. */
static lf_table_t *adapt_table(const char *name, const int64_t fixed[2],
                               const char *text) {
  char dir[512];
  snprintf(dir, sizeof(dir), "%s/%s", tmp_root, name);
  lf_table_new_entry_t e = {ADAPT_KEY, "sm_90", "reduction",    fixed,
                            2,         text,    "acquire_test", "adapt",
                            NULL};
  lf_status_t s = lf_table_write_entry(dir, &e, NULL);
  LF_EXPECT(!s);
  lf_status_free(s);
  lf_table_t *t = NULL;
  s = lf_table_open(dir, &t);
  LF_EXPECT(!s && t);
  lf_status_free(s);
  return t;
}

/* The first user message of the k-th request of `match` ("" if none). */
static const char *first_user_of(cJSON *log, const char *match, int k) {
  const cJSON *r;
  cJSON_ArrayForEach(r, log) {
    const cJSON *rule = cJSON_GetObjectItem(r, "rule");
    const cJSON *n = cJSON_GetObjectItem(r, "n");
    if (!cJSON_IsString(rule) || strcmp(rule->valuestring, match) != 0 ||
        (int)n->valuedouble != k)
      continue;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(r, "messages")) {
      if (strcmp(cJSON_GetObjectItem(m, "role")->valuestring, "user") == 0)
        return cJSON_GetObjectItem(m, "content")->valuestring;
    }
  }
  return "";
}

/* Runs task 0 (of ADAPT_KEY at 2048 x 1000) with `table` against a server
 * that answers `replies`. */
static lf_acquire_report_t *run_adapt(const lf_table_t *table,
                                      const char *replies, bool verify,
                                      cJSON **out_log) {
  make_tasks(1);
  tasks[0].pattern = ADAPT_KEY;
  tasks[0].pattern_sizes = adapt_sizes;
  tasks[0].num_pattern_sizes = 2;
  char cfg[512];
  snprintf(cfg, sizeof(cfg),
           "{\"rules\":[{\"match\":\"%s\",\"replies\":[%s]}]}", names[0],
           replies);
  if (!start_server(cfg))
    return NULL;
  lf_acquire_options_t o = verify ? loop_options(0) : options();
  o.table = table;
  lf_acquire_report_t *r = run(1, &o);
  stop_server();
  *out_log = server_log();
  return r;
}

LF_TEST(adapt_request_from_an_entry_that_refuses_the_sizes) {
  /* A kernel written for 2048 x 4096: every size fixed. */
  const int64_t fixed[2] = {2048, 4096};
  lf_table_t *t = adapt_table(
      "adapt-refuses", fixed,
      "gpu.module @k {\n  gpu.func @rows_4096() kernel attributes "
      "{known_block_size = array<i32: 1, 1, 1>, known_grid_size = array<i32: "
      "1, 1, 1>} {\n    // ENTRY_MARKER_9\n    gpu.return\n  }\n}\n");
  cJSON *log = NULL;
  lf_acquire_report_t *r = run_adapt(t, "\"good\"", false, &log);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(requests_of(log, names[0]) == 1);
  const char *first = first_user_of(log, names[0], 0);
  LF_EXPECT(strncmp(first, "Adapt a verified GPU kernel", 27) == 0);
  LF_EXPECT(strstr(first, "- From: pattern table entry "
                          "abcd000000000000/abcd000000000000-adapt.json "
                          "(acquire_test)"));
  LF_EXPECT(strstr(first, "// ENTRY_MARKER_9"));
  LF_EXPECT(strstr(first, "- Verified at: S0 = 2048, S1 = 4096"));
  LF_EXPECT(strstr(first, "- This subgraph: S0 = 2048, S1 = 1000"));
  LF_EXPECT(strstr(first, "S1 = 1000, the template is for S1 = 4096"));
  LF_EXPECT(!strstr(first, "### Example"));
  LF_EXPECT(r && strcmp(r->results[0].first_request,
                        "adapt from abcd000000000000/abcd000000000000-"
                        "adapt.json (verified at S0=2048, S1=4096; refused: "
                        "S1 = 1000, the template is for S1 = 4096)") == 0);
  char *json = NULL;
  if (r)
    lf_status_free(lf_acquire_report_to_json(r, tasks, false, &json));
  LF_EXPECT(json && strstr(json, "\"first_request\":\t\"adapt from "
                                 "abcd000000000000/"));
  free(json);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
  lf_table_close(t);
}

LF_TEST(blank_request_without_an_entry_for_the_key) {
  /* The table holds an entry of another key only: today's request, byte
   * for byte. */
  const int64_t fixed[2] = {2048, 4096};
  char dir[512];
  snprintf(dir, sizeof(dir), "%s/adapt-other", tmp_root);
  lf_table_new_entry_t e = {
      "dcba000000000000000000000000000000000000000000000000000000000008",
      "sm_90",
      "reduction",
      fixed,
      2,
      "gpu.module @k {\n  // OTHER_KEY_MARKER\n}\n",
      "acquire_test",
      "other",
      NULL};
  lf_status_free(lf_table_write_entry(dir, &e, NULL));
  lf_table_t *t = NULL;
  lf_status_free(lf_table_open(dir, &t));
  cJSON *log = NULL;
  lf_acquire_report_t *r = run_adapt(t, "\"good\"", false, &log);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && strcmp(r->results[0].first_request, "blank") == 0);
  lf_prompt_set_t *ps = NULL;
  lf_status_free(lf_prompt_set_load(NULL, &ps));
  lf_prompt_subject_t subj = {.name = tasks[0].name,
                              .fingerprint = tasks[0].fingerprint,
                              .klass = tasks[0].klass,
                              .ir = tasks[0].ir,
                              .signature = tasks[0].signature,
                              .arch = tasks[0].arch,
                              .pattern = tasks[0].pattern,
                              .pattern_sizes = tasks[0].pattern_sizes,
                              .num_pattern_sizes = 2};
  lf_strbuf_t b;
  lf_strbuf_init(&b, (size_t)1 << 20);
  LF_EXPECT(ps && !lf_prompt_first(ps, t, &subj, &b));
  LF_EXPECT_STREQ(first_user_of(log, names[0], 0), lf_strbuf_cstr(&b));
  LF_EXPECT(strstr(lf_strbuf_cstr(&b), "OTHER_KEY_MARKER")); /* an example */
  lf_strbuf_free(&b);
  lf_prompt_set_destroy(ps);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
  lf_table_close(t);
}

LF_TEST(adapt_request_after_the_table_kernel_fails_verification) {
  /* A template that admits the sizes, but its kernel is wrong at them: the
   * table answers request 1, verification rejects it, and the model's
   * first request adapts it, carrying the failure. */
  const int64_t fixed[2] = {-1, 1000};
  lf_table_t *t = adapt_table(
      "adapt-fails", fixed,
      "gpu.module @k {\n  // llm-fuse.template-size S0\n  gpu.func "
      "@rows_any() kernel attributes {known_block_size = array<i32: 1, 1, "
      "1>, known_grid_size = array<i32: {{S0 / 2048}}, 1, 1>} {\n    // "
      "WRONG ENTRY_MARKER_9\n    gpu.return\n  }\n}\n");
  cJSON *log = NULL;
  lf_acquire_report_t *r = run_adapt(t, "\"ms:4\"", true, &log);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK);
  LF_EXPECT(r && r->results[0].requests == 2);
  LF_EXPECT(r && r->results[0].attempt_count == 2);
  LF_EXPECT(r && r->results[0].attempts[0].outcome == LF_ATTEMPT_REJECTED);
  LF_EXPECT(r && r->results[0].attempts[1].kind == LF_REQUEST_FIRST);
  LF_EXPECT(r && r->results[0].attempts[1].kept);
  LF_EXPECT(r && strstr(r->results[0].attempts[0].feedback, "E_VERIFY_77"));
  LF_EXPECT(requests_of(log, names[0]) == 1);
  const char *first = first_user_of(log, names[0], 0);
  LF_EXPECT(strncmp(first, "Adapt a verified GPU kernel", 27) == 0);
  LF_EXPECT(strstr(first, "- Verified at: S0 free, S1 = 1000"));
  LF_EXPECT(strstr(first, "rejected (line numbers"));
  LF_EXPECT(strstr(first, "E_VERIFY_77"));
  LF_EXPECT(strstr(first, "// llm-fuse.template-size S0\n"));
  LF_EXPECT(strstr(first, "WRONG ENTRY_MARKER_9"));
  /* One conversation turn: the adapt request is the first, not a repair. */
  const cJSON *req = cJSON_GetArrayItem(log, 0);
  LF_EXPECT(req &&
            cJSON_GetArraySize(cJSON_GetObjectItem(req, "messages")) == 2);
  LF_EXPECT(r && strncmp(r->results[0].first_request,
                         "adapt from abcd000000000000/abcd000000000000-"
                         "adapt.json (verified at S0=*, S1=1000; failed: ",
                         90) == 0);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
  lf_table_close(t);
}

/* ---- The table's next entry after its kernel fails ----------------------*/

#define NEXT_ID(name) "abcd000000000000/abcd000000000000-" name ".json"

/* Writes entries of ADAPT_KEY for sm_90 under <tmp_root>/<dir_name>/v1/,
 * entry k named names[k], fixed to fixed[k] (S0 -1: free), its kernel
 * holding markers[k] (WRONG: rejected; BROKEN: does not build; FAKE_MS X:
 * verified at X ms), and opens that folder as a table. */
static lf_table_t *next_table_precision(const char *dir_name, size_t n,
                                        const char *const *names,
                                        const int64_t (*fixed)[2],
                                        const char *const *markers,
                                        const char *const *precisions) {
  char dir[512];
  snprintf(dir, sizeof(dir), "%s/%s", tmp_root, dir_name);
  for (size_t k = 0; k < n; ++k) {
    char text[1024];
    snprintf(text, sizeof(text),
             "gpu.module @k {\n  // llm-fuse.template-size S0\n  gpu.func "
             "@rows_any() kernel attributes {known_block_size = array<i32: 1, "
             "1, 1>, known_grid_size = array<i32: {{S0 / 2048}}, 1, 1>} {\n "
             "   // %s\n    gpu.return\n  }\n}\n",
             markers[k]);
    const char *precision = precisions ? precisions[k] : NULL;
    lf_table_new_entry_t e = {ADAPT_KEY,      "sm_90",  "reduction",
                              fixed[k],       2,        text,
                              "acquire_test", names[k], precision};
    lf_status_t s = lf_table_write_entry(dir, &e, NULL);
    LF_EXPECT(!s);
    lf_status_free(s);
  }
  lf_table_t *t = NULL;
  lf_status_t s = lf_table_open(dir, &t);
  LF_EXPECT(!s && t && lf_table_size(t) == n);
  lf_status_free(s);
  return t;
}

/* next_table_precision with exact entries only. */
static lf_table_t *next_table(const char *dir_name, size_t n,
                              const char *const *names,
                              const int64_t (*fixed)[2],
                              const char *const *markers) {
  return next_table_precision(dir_name, n, names, fixed, markers, NULL);
}

/* Offline options (an empty replay set: the table answers) with the fake
 * verifier. */
static lf_acquire_options_t next_offline_options(const lf_table_t *table) {
  static char empty[512];
  snprintf(empty, sizeof(empty), "%s/empty-replay", tmp_root);
  mkdir(empty, 0755);
  lf_acquire_options_t o = loop_options(0);
  o.provider = LF_PROVIDER_REPLAY;
  o.replay_dir = empty;
  o.offline = true;
  o.table = table;
  return o;
}

static lf_acquire_report_t *run_next(const lf_acquire_options_t *o) {
  make_tasks(1);
  tasks[0].pattern = ADAPT_KEY;
  tasks[0].pattern_sizes = adapt_sizes;
  tasks[0].num_pattern_sizes = 2;
  atomic_store(&builds, 0);
  return run(1, o);
}

LF_TEST(table_next_entry_after_the_first_fails_verification) {
  /* The entry made for 2048 x 1000 (tried first: the most specific) is
   * wrong there; the general template of the same key is right. */
  const char *entry[2] = {"n1_specific", "n2_general"};
  const int64_t fixed[2][2] = {{2048, 1000}, {-1, 1000}};
  const char *markers[2] = {"WRONG N1", "FAKE_MS 3 N2"};
  lf_table_t *t = next_table("next-verifies", 2, entry, fixed, markers);
  lf_acquire_options_t o = next_offline_options(t);
  o.max_attempts = 1; /* the table's next entries are not model attempts */
  lf_acquire_report_t *r = run_next(&o);
  const lf_acquire_result_t *res = r ? &r->results[0] : NULL;
  LF_EXPECT(res && res->outcome == LF_ACQUIRE_OK);
  LF_EXPECT(res && res->requests == 2 && res->attempt_count == 2);
  LF_EXPECT(res && r->requests == 2);
  LF_EXPECT(atomic_load(&evals) == 2);
  LF_EXPECT(res && res->attempts[0].outcome == LF_ATTEMPT_REJECTED &&
            res->attempts[0].kind == LF_REQUEST_FIRST &&
            !res->attempts[0].kept);
  LF_EXPECT(res && strcmp(res->attempts[0].provider, "table") == 0);
  LF_EXPECT_STREQ(res ? res->attempts[0].model : "", NEXT_ID("n1_specific"));
  LF_EXPECT(res && strcmp(res->attempts[0].verify_reason, "mismatch") == 0);
  /* Nothing went to a model: no feedback. */
  LF_EXPECT(res && res->attempts[0].feedback[0] == '\0');
  LF_EXPECT(res && res->attempts[1].outcome == LF_ATTEMPT_VERIFIED &&
            res->attempts[1].kind == LF_REQUEST_FIRST &&
            res->attempts[1].request == 2 && res->attempts[1].kept);
  LF_EXPECT_STREQ(res ? res->attempts[1].model : "", NEXT_ID("n2_general"));
  LF_EXPECT(res && strcmp(res->provider, "table") == 0);
  LF_EXPECT_STREQ(res ? res->model : "", NEXT_ID("n2_general"));
  LF_EXPECT(res && res->eval.accepted && res->eval.time_ms == 3);
  LF_EXPECT(strstr(kept_text(r), "FAKE_MS 3 N2"));
  LF_EXPECT(res && res->first_request[0] == '\0');
  char *json = NULL;
  if (r)
    lf_status_free(lf_acquire_report_to_json(r, tasks, false, &json));
  LF_EXPECT(json && strstr(json, "\"model\":\t\"" NEXT_ID("n1_specific")));
  LF_EXPECT(json && strstr(json, "\"verify_reason\":\t\"mismatch\""));
  free(json);
  lf_acquire_report_destroy(r);

  /* With openai the next entry answers before the model: nobody is asked. */
  LF_EXPECT(start_server("{\"rules\":[{\"match\":\"*\",\"replies\":"
                         "[\"ms:1\"]}]}"));
  o = loop_options(0);
  o.table = t;
  r = run_next(&o);
  stop_server();
  cJSON *log = server_log();
  LF_EXPECT(cJSON_GetArraySize(log) == 0);
  LF_EXPECT(r && r->results[0].outcome == LF_ACQUIRE_OK &&
            r->results[0].requests == 2);
  LF_EXPECT_STREQ(r ? r->results[0].model : "", NEXT_ID("n2_general"));
  LF_EXPECT(r && strcmp(r->results[0].first_request, "") == 0);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
  lf_table_close(t);
}

LF_TEST(table_next_entries_stop_at_the_bound) {
  /* Four entries admit the sizes; the first three fail (a mismatch, a
   * build error, a mismatch), and the fourth, right, is never tried. */
  const char *entry[4] = {"n1_specific", "n2_broken", "n3_wrong", "n4_right"};
  const int64_t fixed[4][2] = {
      {2048, 1000}, {-1, 1000}, {-1, 1000}, {-1, 1000}};
  const char *markers[4] = {"WRONG N1", "BROKEN N2", "WRONG N3",
                            "FAKE_MS 2 N4"};
  lf_table_t *t = next_table("next-bound", 4, entry, fixed, markers);
  lf_acquire_options_t o = next_offline_options(t);
  lf_acquire_report_t *r = run_next(&o);
  const lf_acquire_result_t *res = r ? &r->results[0] : NULL;
  /* Then today's course offline: the replay set has no repair, and the
   * last rejection is the result, named for its own entry. */
  LF_EXPECT(res && res->outcome == LF_ACQUIRE_REJECTED);
  LF_EXPECT(res && res->requests == LF_ACQUIRE_TABLE_TRIES + 1);
  LF_EXPECT(res && res->attempt_count == 4);
  LF_EXPECT(atomic_load(&builds) == 3 && atomic_load(&evals) == 2);
  static const lf_acquire_attempt_outcome_t want[3] = {
      LF_ATTEMPT_REJECTED, LF_ATTEMPT_BUILD_FAILED, LF_ATTEMPT_REJECTED};
  for (size_t k = 0; res && k < 3; ++k) {
    LF_EXPECT(res->attempts[k].outcome == want[k]);
    LF_EXPECT(res->attempts[k].kind == LF_REQUEST_FIRST);
    LF_EXPECT(strcmp(res->attempts[k].provider, "table") == 0);
    LF_EXPECT(strstr(res->attempts[k].model, entry[k]) != NULL);
  }
  LF_EXPECT(res && strstr(res->attempts[1].message, "E_MARKER_42"));
  LF_EXPECT(res && res->attempts[3].outcome == LF_ATTEMPT_PROVIDER_ERROR &&
            res->attempts[3].kind == LF_REQUEST_REPAIR);
  for (size_t k = 0; res && k < res->attempt_count; ++k)
    LF_EXPECT(!strstr(res->attempts[k].model, "n4_right"));
  LF_EXPECT(res && res->kernel && strstr(res->kernel, "WRONG N3"));
  LF_EXPECT(res && res->attempts[2].kept);
  LF_EXPECT(res && strcmp(res->provider, "table") == 0);
  LF_EXPECT_STREQ(res ? res->model : "", NEXT_ID("n3_wrong"));
  LF_EXPECT(res && strstr(res->message, "the replay set has no request 4"));
  lf_acquire_report_destroy(r);
  /* A request budget counts the table's requests: two allow two entries. */
  o = next_offline_options(t);
  o.max_requests = 2;
  r = run_next(&o);
  res = r ? &r->results[0] : NULL;
  LF_EXPECT(res && res->requests == 2 && atomic_load(&builds) == 2);
  LF_EXPECT(res && res->outcome == LF_ACQUIRE_BUDGET &&
            res->budget == LF_BUDGET_REQUESTS);
  lf_acquire_report_destroy(r);
  lf_table_close(t);
}

LF_TEST(table_next_entry_in_tf32_mode_is_the_exact_one) {
  /* TF32 mode (KernelBench L3 P44): the tf32 entry answers first and is
   * rejected at these sizes; the exact entry of the same key is a right
   * answer in TF32 mode, so it answers next. */
  const char *entry[2] = {"n1_exact", "t1_tf32"};
  const int64_t fixed[2][2] = {{-1, 1000}, {-1, 1000}};
  const char *markers[2] = {"FAKE_MS 3 EXACT", "WRONG TF32"};
  const char *precisions[2] = {NULL, "tf32"};
  lf_table_t *t =
      next_table_precision("next-tf32", 2, entry, fixed, markers, precisions);
  lf_acquire_options_t o = next_offline_options(t);
  make_tasks(1);
  tasks[0].pattern = ADAPT_KEY;
  tasks[0].pattern_sizes = adapt_sizes;
  tasks[0].num_pattern_sizes = 2;
  tasks[0].precision = "tf32";
  tasks[0].tf32_k = 1000;
  lf_acquire_report_t *r = run(1, &o);
  const lf_acquire_result_t *res = r ? &r->results[0] : NULL;
  LF_EXPECT(res && res->outcome == LF_ACQUIRE_OK && res->requests == 2);
  LF_EXPECT_STREQ(res ? res->attempts[0].model : "", NEXT_ID("t1_tf32"));
  LF_EXPECT(res && res->attempts[0].outcome == LF_ATTEMPT_REJECTED);
  LF_EXPECT_STREQ(res ? res->attempts[1].model : "", NEXT_ID("n1_exact"));
  LF_EXPECT(res && res->attempts[1].outcome == LF_ATTEMPT_VERIFIED &&
            res->attempts[1].kept);
  LF_EXPECT_STREQ(res ? res->model : "", NEXT_ID("n1_exact"));
  lf_acquire_report_destroy(r);
  /* An exact request never sees the tf32 entry: the exact one answers
   * request 1. */
  r = run_next(&o);
  res = r ? &r->results[0] : NULL;
  LF_EXPECT(res && res->outcome == LF_ACQUIRE_OK && res->requests == 1);
  LF_EXPECT_STREQ(res ? res->model : "", NEXT_ID("n1_exact"));
  lf_acquire_report_destroy(r);
  lf_table_close(t);
}

LF_TEST(adapt_request_after_every_table_entry_fails) {
  /* Two entries admit the sizes and both are wrong: then the model's first
   * request adapts the first one tried, with its failure, as when the
   * table had one entry. */
  const char *entry[2] = {"n1_specific", "n2_general"};
  const int64_t fixed[2][2] = {{2048, 1000}, {-1, 1000}};
  const char *markers[2] = {"WRONG N1", "WRONG N2"};
  lf_table_t *t = next_table("next-adapt", 2, entry, fixed, markers);
  LF_EXPECT(start_server("{\"rules\":[{\"match\":\"*\",\"replies\":"
                         "[\"ms:4\"]}]}"));
  lf_acquire_options_t o = loop_options(0);
  o.table = t;
  o.max_attempts = 2; /* the table's first request and the model's */
  lf_acquire_report_t *r = run_next(&o);
  stop_server();
  cJSON *log = server_log();
  const lf_acquire_result_t *res = r ? &r->results[0] : NULL;
  LF_EXPECT(res && res->outcome == LF_ACQUIRE_OK);
  LF_EXPECT(res && res->requests == 3 && res->attempt_count == 3);
  LF_EXPECT(res && res->attempts[0].outcome == LF_ATTEMPT_REJECTED &&
            res->attempts[1].outcome == LF_ATTEMPT_REJECTED);
  LF_EXPECT_STREQ(res ? res->attempts[1].model : "", NEXT_ID("n2_general"));
  LF_EXPECT(res && res->attempts[2].kind == LF_REQUEST_FIRST &&
            res->attempts[2].kept &&
            strcmp(res->attempts[2].provider, "openai") == 0);
  LF_EXPECT(res && strcmp(res->provider, "openai") == 0);
  /* The failure went to the model on the first entry's attempt. */
  LF_EXPECT(res && strstr(res->attempts[0].feedback, "E_VERIFY_77"));
  LF_EXPECT(res && res->attempts[1].feedback[0] == '\0');
  LF_EXPECT(requests_of(log, "*") == 1);
  const char *first = first_user_of(log, "*", 0);
  LF_EXPECT(strncmp(first, "Adapt a verified GPU kernel", 27) == 0);
  LF_EXPECT(strstr(first, "- From: pattern table entry " NEXT_ID(
                              "n1_specific") " (acquire_test)"));
  LF_EXPECT(strstr(first, "WRONG N1") && !strstr(first, "WRONG N2"));
  LF_EXPECT(strstr(first, "E_VERIFY_77"));
  static const char adapt_from[] =
      "adapt from " NEXT_ID("n1_specific") " (verified at S0=2048, S1=1000; "
                                           "failed: ";
  LF_EXPECT(res && strncmp(res->first_request, adapt_from,
                           sizeof(adapt_from) - 1) == 0);
  cJSON_Delete(log);
  lf_acquire_report_destroy(r);
  lf_table_close(t);
}

LF_TEST(bad_options_are_refused) {
  make_tasks(1);
  lf_acquire_options_t o = options();
  lf_acquire_report_t *r = NULL;
  o.max_attempts = 0;
  lf_status_t s = lf_acquire_run(tasks, 1, &o, &r);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT && !r);
  lf_status_free(s);
  o = options();
  o.provider = LF_PROVIDER_REPLAY;
  o.record_dir = "/tmp/x";
  s = lf_acquire_run(tasks, 1, &o, &r);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  lf_status_free(s);
  lf_acquire_task_t bad = tasks[0];
  bad.fingerprint = "../../etc/passwd";
  o = options();
  s = lf_acquire_run(&bad, 1, &o, &r);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  lf_status_free(s);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  lf_log_set_level(LF_LOG_WARN);
  snprintf(tmp_root, sizeof(tmp_root), "/tmp/lf_acquire_test.XXXXXX");
  if (!mkdtemp(tmp_root)) {
    perror("mkdtemp");
    return 1;
  }
  unsetenv("LF_ACQUIRE_TEST_KEY");
  unsetenv("LLM_FUSE_REPLAY_DIR");
  unsetenv("LLM_FUSE_PROMPTS_DIR");
  LF_RUN(repair_loop_fixes_a_broken_kernel);
  LF_RUN(max_attempts_exhausted);
  LF_RUN(hostile_replies_become_repairs_or_errors);
  LF_RUN(request_budget_runs_out_mid_module);
  LF_RUN(token_budget_runs_out_mid_module);
  LF_RUN(wall_budget_cuts_requests_in_flight);
  LF_RUN(wall_budget_between_rounds);
  LF_RUN(loop_wrong_then_right);
  LF_RUN(loop_slow_then_faster);
  LF_RUN(loop_faster_but_wrong_never_replaces);
  LF_RUN(loop_refinement_that_fails_to_build);
  LF_RUN(loop_that_never_converges);
  LF_RUN(loop_stops_near_the_roofline);
  LF_RUN(loop_unjudged_ends_without_feedback);
  LF_RUN(loop_tunes_declared_variants);
  LF_RUN(loop_builds_ahead);
  LF_RUN(loop_budget_keeps_the_best_verified);
  LF_RUN(loop_requests_overlap_verification);
  LF_RUN(requests_run_concurrently_within_the_cap);
  LF_RUN(record_then_replay_round_trip);
  LF_RUN(shipped_replay_set_answers_offline);
  LF_RUN(shipped_replay_set_with_a_verifier_ends_after_its_recording);
  LF_RUN(provider_none_and_offline_openai_never_ask);
  LF_RUN(cache_hit_skips_the_provider_and_offline_uses_it);
  LF_RUN(echoed_key_is_redacted_everywhere);
  LF_RUN(adapt_request_from_an_entry_that_refuses_the_sizes);
  LF_RUN(blank_request_without_an_entry_for_the_key);
  LF_RUN(adapt_request_after_the_table_kernel_fails_verification);
  LF_RUN(table_next_entry_after_the_first_fails_verification);
  LF_RUN(table_next_entries_stop_at_the_bound);
  LF_RUN(table_next_entry_in_tf32_mode_is_the_exact_one);
  LF_RUN(adapt_request_after_every_table_entry_fails);
  LF_RUN(bad_options_are_refused);
  char cmd[400];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
  if (lf_test_failures_ == 0 && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tmp_root);
  return lf_test_finish();
}
