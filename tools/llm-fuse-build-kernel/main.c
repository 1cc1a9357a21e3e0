/* llm-fuse-build-kernel - builds one candidate kernel (MLIR gpu.module text)
 * into PTX and a cubin, or reports why it cannot, as JSON.
 *
 * By default the build runs in a child process (this same tool with
 * --in-process) under a time limit and resource limits, so that a parser
 * or back-end crash on hostile text is reported as kind "crash" and this
 * process survives. --in-process builds here; it is what the child runs.
 *
 * Exit status: 0 built, 1 the candidate failed (any kind; JSON says which),
 * 2 usage or internal error (message on stderr).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "builder/builder.h"
#include "builder/internal.h"
#include "llm_client/tune.h"

#define TOOL "llm-fuse-build-kernel"
#define MAX_INPUT (16u << 20)

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: " TOOL " --signature TYPE [options] KERNEL.mlir|-\n"
      "Builds a candidate kernel against the kernel contract\n"
      "(docs/kernel-contract.md) and prints the result as JSON.\n"
      "\n"
      "  --signature TYPE     the outlined subgraph's function type, e.g.\n"
      "                       '(tensor<4xf32>) -> tensor<4xf32>' (required)\n"
      "  --chip CHIP          sm_90 (default), sm_90a or sm_80\n"
      "  --line-offset N      reply lines before the kernel text\n"
      "  --tune-variant K     a kernel that declares tune variants\n"
      "                       (// llm-fuse.tune): build variant K, 0-based\n"
      "                       (default 0, what a build without a GPU uses)\n"
      "  --allow-inline-asm   accept llvm.inline_asm / nvvm.inline_ptx\n"
      "  --no-cubin           PTX only, do not run ptxas\n"
      "  --ptxas PATH         ptxas to use (default: CUDA_HOME, "
      "/usr/local/cuda, PATH)\n"
      "  --libdevice PATH     libdevice.10.bc to link for math functions\n"
      "  --out-dir DIR        write result.json, kernel.ptx, kernel.cubin\n"
      "  --repair             print the repair text of a failure, not JSON\n"
      "  --quiet              print nothing on stdout\n"
      "  --timeout-ms N       child wall-clock limit (default 60000)\n"
      "  --memory-mb N        child address-space limit (default 8192)\n"
      "  --in-process         build in this process (no isolation)\n"
      "\n"
      "Exit status: 0 built, 1 the candidate failed, 2 usage/internal "
      "error.\n");
}

static void log_stage(const char *stage, void *user_data) {
  (void)user_data;
  /* stderr is unbuffered: the line is out before a crash in the stage. */
  fprintf(stderr, TOOL ": stage %s\n", stage);
}

/* mkdir -p. */
/* In the child, an internal error still leaves a result.json, so that the
 * parent can tell it from a crash. */
static void write_internal(const char *dir, lf_status_t s) {
  if (!dir)
    return;
  char path[4200], json[1024];
  snprintf(path, sizeof(path), "%s/result.json", dir);
  char msg[600];
  snprintf(msg, sizeof(msg), "%s", lf_status_message(s));
  for (char *p = msg; *p; ++p)
    if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
      *p = ' ';
  snprintf(json, sizeof(json),
           "{\"ok\": false, \"kind\": \"internal\", "
           "\"message\": \"%s\"}\n",
           msg);
  lf_status_free(lf_write_file_plain(path, json, strlen(json)));
}

static int parse_int(const char *flag, const char *text, long long min,
                     long long *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end || v < min) {
    fprintf(stderr, TOOL ": %s expects an integer >= %lld, got '%s'\n", flag,
            min, text);
    return 0;
  }
  *out = v;
  return 1;
}

static int tool_main(int argc, char **argv) {
  lf_log_init_from_env();
  lf_build_request_t req = {0};
  lf_build_limits_t limits = {0};
  const char *input = NULL, *out_dir = NULL;
  bool in_process = false, quiet = false, repair = false;
  long long v = 0, tune_variant = 0;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    bool has_value = i + 1 < argc;
#define VALUE() (has_value ? argv[++i] : NULL)
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--in-process") == 0) {
      in_process = true;
    } else if (strcmp(a, "--quiet") == 0) {
      quiet = true;
    } else if (strcmp(a, "--repair") == 0) {
      repair = true;
    } else if (strcmp(a, "--allow-inline-asm") == 0) {
      req.allow_inline_asm = true;
    } else if (strcmp(a, "--no-cubin") == 0) {
      req.skip_cubin = true;
    } else if (has_value && strcmp(a, "--signature") == 0) {
      req.signature = VALUE();
    } else if (has_value && strcmp(a, "--chip") == 0) {
      req.chip = VALUE();
    } else if (has_value && strcmp(a, "--ptxas") == 0) {
      req.ptxas_path = VALUE();
    } else if (has_value && strcmp(a, "--libdevice") == 0) {
      req.libdevice_path = VALUE();
    } else if (has_value && strcmp(a, "--out-dir") == 0) {
      out_dir = VALUE();
    } else if (has_value && strcmp(a, "--line-offset") == 0) {
      if (!parse_int(a, VALUE(), 0, &v))
        return 2;
      req.line_offset = (int)v;
    } else if (has_value && strcmp(a, "--tune-variant") == 0) {
      if (!parse_int(a, VALUE(), 0, &tune_variant))
        return 2;
    } else if (has_value && strcmp(a, "--timeout-ms") == 0) {
      if (!parse_int(a, VALUE(), 1, &v))
        return 2;
      limits.timeout_ms = v;
    } else if (has_value && strcmp(a, "--memory-mb") == 0) {
      if (!parse_int(a, VALUE(), 64, &v))
        return 2;
      limits.memory_bytes = v << 20;
    } else if (a[0] == '-' && a[1] && !input) {
      fprintf(stderr, TOOL ": unknown or incomplete option '%s'\n", a);
      usage(stderr);
      return 2;
    } else if (!input) {
      input = a;
    } else {
      fprintf(stderr, TOOL ": more than one input ('%s')\n", a);
      return 2;
    }
#undef VALUE
  }
  if (!input || !req.signature) {
    fprintf(stderr, TOOL ": %s\n",
            !input ? "no kernel file given" : "--signature is required");
    usage(stderr);
    return 2;
  }

  lf_strbuf_t text;
  lf_strbuf_init(&text, MAX_INPUT);
  lf_status_t s = strcmp(input, "-") == 0 ? lf_read_file("/dev/stdin", &text)
                                          : lf_read_file(input, &text);
  if (s) {
    fprintf(stderr, TOOL ": %s\n", lf_status_message(s));
    write_internal(in_process ? out_dir : NULL, s);
    lf_status_free(s);
    lf_strbuf_free(&text);
    return 2;
  }
  req.kernel_text = lf_strbuf_cstr(&text);
  req.kernel_size = lf_strbuf_len(&text);
  /* Declared variants are instantiated here, as the pass does; the child
   * (--in-process) gets instantiated text, which declares none. */
  lf_tune_set_t *tune = NULL;
  if (!in_process) {
    s = lf_tune_expand(req.kernel_text, req.kernel_size, &tune);
    if (s) {
      fprintf(stderr, TOOL ": tune: %s\n", lf_status_message(s));
      lf_status_free(s);
      lf_strbuf_free(&text);
      return 1;
    }
    if ((size_t)tune_variant >= tune->count) {
      fprintf(stderr, TOOL ": --tune-variant %lld: the kernel has %zu\n",
              tune_variant, tune->count);
      lf_tune_set_destroy(tune);
      lf_strbuf_free(&text);
      return 2;
    }
    if (tune->tuned)
      fprintf(stderr, TOOL ": variant %lld of %zu: %s\n", tune_variant,
              tune->count, tune->variants[tune_variant].label);
    req.kernel_text = tune->variants[tune_variant].text;
    req.kernel_size = strlen(req.kernel_text);
  }

  lf_build_result_t *r = NULL;
  if (in_process) {
    req.on_stage = log_stage;
    s = lf_build_kernel_in_process(&req, &r);
  } else {
    /* The child is this very tool. */
    limits.tool_path = "/proc/self/exe";
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
      self[n] = '\0';
      limits.tool_path = self;
    }
    s = lf_build_kernel(&req, &limits, &r);
  }
  lf_tune_set_destroy(tune);
  lf_strbuf_free(&text);
  if (s) {
    fprintf(stderr, TOOL ": %s\n", lf_status_message(s));
    write_internal(in_process ? out_dir : NULL, s);
    lf_status_free(s);
    return 2;
  }

  char *json = NULL;
  s = out_dir ? lf_build_result_write_dir(r, out_dir, &json)
              : lf_build_result_to_json(r, NULL, NULL, &json);
  if (s) {
    fprintf(stderr, TOOL ": %s\n", lf_status_message(s));
    lf_status_free(s);
    lf_build_result_destroy(r);
    return 2;
  }
  if (!quiet) {
    if (repair && r->kind != LF_BUILD_OK) {
      lf_strbuf_t text_out;
      lf_strbuf_init(&text_out, LF_BUILD_REPAIR_CAP + 1);
      lf_status_free(lf_build_result_repair_text(r, &text_out));
      fputs(lf_strbuf_cstr(&text_out), stdout);
      lf_strbuf_free(&text_out);
    } else {
      printf("%s\n", json);
    }
  }
  int rc = r->kind == LF_BUILD_OK ? 0 : 1;
  free(json);
  lf_build_result_destroy(r);
  return rc;
}

/* --batch (a benchmark, bench/table/build_time.py): builds each request of
 * stdin, one line "KERNEL.mlir<TAB>SIGNATURE<TAB>CHIP", as the pass does
 * (lf_build_kernel: the build server unless LLM_FUSE_BUILD_SERVER=0), and
 * prints one JSON line per build: ok, kind, wall and cpu ms of the child
 * (with its ptxas), its stage times. */
static int batch(void) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0)
    return 2;
  self[n] = '\0';
  lf_build_limits_t limits = {.tool_path = self};
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, stdin) > 0) {
    line[strcspn(line, "\n")] = '\0';
    char *sig = strchr(line, '\t');
    char *chip = sig ? strchr(sig + 1, '\t') : NULL;
    if (!chip) {
      printf("{\"error\": \"bad request line\"}\n");
      fflush(stdout);
      continue;
    }
    *sig++ = '\0';
    *chip++ = '\0';
    lf_strbuf_t text;
    lf_strbuf_init(&text, MAX_INPUT);
    lf_status_t s = lf_read_file(line, &text);
    lf_build_result_t *r = NULL;
    if (!s) {
      lf_build_request_t req = {0};
      req.kernel_text = lf_strbuf_cstr(&text);
      req.kernel_size = lf_strbuf_len(&text);
      req.signature = sig;
      req.chip = chip;
      s = lf_build_kernel(&req, &limits, &r);
    }
    if (s) {
      printf("{\"error\": \"%s\"}\n", lf_status_code_name(lf_status_code(s)));
      lf_status_free(s);
    } else {
      printf("{\"ok\": %s, \"kind\": \"%s\", \"wall_ms\": %.3f, \"cpu_ms\": "
             "%.3f, \"ms\": {\"parse\": %.3f, \"contract\": %.3f, \"lower\": "
             "%.3f, \"llvm\": %.3f, \"ptxas\": %.3f, \"total\": %.3f}}\n",
             r->kind == LF_BUILD_OK ? "true" : "false",
             lf_build_kind_name(r->kind), r->ms_total, r->ms_cpu, r->ms_parse,
             r->ms_contract, r->ms_lower, r->ms_llvm, r->ms_ptxas, r->ms_total);
    }
    fflush(stdout);
    lf_build_result_destroy(r);
    lf_strbuf_free(&text);
  }
  free(line);
  return 0;
}

int main(int argc, char **argv) {
  /* The build server (builder/server.c): each build is a fork of this
   * process that runs tool_main() on its request's argv. */
  if (argc == 3 && strcmp(argv[1], "--serve") == 0)
    return lf_build_server_main(atoi(argv[2]), tool_main);
  if (argc == 2 && strcmp(argv[1], "--batch") == 0)
    return batch();
  return tool_main(argc, argv);
}
