/* result.c - build results: kinds, size caps, diagnostics, repair text and
 * the JSON form the child process hands back.
 *
 * Everything a result says about a failure is capped here, so a hostile
 * reply cannot grow a repair prompt: the message, the diagnostics and the
 * hint each have a cap, and the repair text has one in all.
 */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "builder/internal.h"

static const char *const kind_names[LF_BUILD_KIND_COUNT_] = {
    [LF_BUILD_OK] = "ok",
    [LF_BUILD_PARSE] = "parse",
    [LF_BUILD_VERIFY] = "verify",
    [LF_BUILD_CONTRACT] = "contract",
    [LF_BUILD_LOWERING] = "lowering",
    [LF_BUILD_PTXAS] = "ptxas",
    [LF_BUILD_CRASH] = "crash",
    [LF_BUILD_TIMEOUT] = "timeout",
};

const char *lf_build_kind_name(lf_build_kind_t kind) {
  if ((unsigned)kind >= LF_BUILD_KIND_COUNT_)
    return "unknown";
  return kind_names[kind];
}

bool lf_build_kind_parse(const char *name, lf_build_kind_t *out_kind) {
  for (int k = 0; k < LF_BUILD_KIND_COUNT_; ++k)
    if (name && strcmp(name, kind_names[k]) == 0) {
      *out_kind = (lf_build_kind_t)k;
      return true;
    }
  return false;
}

static const char *const kind_hints[LF_BUILD_KIND_COUNT_] = {
    [LF_BUILD_OK] = "",
    [LF_BUILD_PARSE] =
        "The reply is not valid MLIR text. Fix the syntax at the line shown: "
        "every SSA value is defined before use and typed consistently, ops "
        "use their documented assembly format (or the generic \"op\"(...) "
        "form), regions and braces are balanced, and only one gpu.module is "
        "given.",
    [LF_BUILD_VERIFY] =
        "The text parsed but an op is invalid. Read the verifier message at "
        "the line shown and fix that op: operand and result types must match "
        "(no implicit casts; use arith.extf/truncf/index_cast), attributes "
        "must have the expected types, and every block must end with its "
        "terminator (gpu.return, scf.yield, func.return).",
    [LF_BUILD_CONTRACT] =
        "The kernel breaks the llm-fuse kernel contract; fix the rule named "
        "in brackets.",
    [LF_BUILD_LOWERING] =
        "The kernel is valid MLIR but could not be lowered to PTX. Replace "
        "the op at the line shown with supported ops: gpu, scf, arith, math, "
        "memref, vector (1-D loads/stores, broadcast, reduction, fma), nvgpu "
        "and nvvm. vector.multi_reduction, tensor and linalg ops have no "
        "lowering here.",
    [LF_BUILD_PTXAS] =
        "ptxas rejected the generated PTX. Common causes: more than 48 KiB "
        "of static shared memory (use gpu.dynamic_shared_memory with the "
        "llm_fuse.dynamic_shared_memory attribute instead), too many "
        "registers for the block size, or an instruction the target chip "
        "lacks (wgmma needs sm_90a, cp.async.bulk needs sm_90).",
    [LF_BUILD_CRASH] =
        "The compiler crashed on this kernel. It is usually a construct the "
        "MLIR/LLVM toolchain cannot handle: conversions between floats and "
        "integers wider than 64 bits, huge vector types, or extremely deep "
        "nesting. Rewrite the kernel with plain scalar or short 1-D vector "
        "code using i1-i64, f16, bf16, f32 and f64.",
    [LF_BUILD_TIMEOUT] =
        "Building the kernel took too long. Avoid fully unrolled loops with "
        "huge trip counts, very large vector types and big constant tables; "
        "keep loops as scf.for.",
};

const char *lf_build_kind_hint(lf_build_kind_t kind) {
  if ((unsigned)kind >= LF_BUILD_KIND_COUNT_)
    return "";
  return kind_hints[kind];
}

lf_status_t lf_set_capped(char **dst, const char *text, size_t cap) {
  if (!text)
    text = "";
  size_t n = strlen(text);
  bool cut = n >= cap;
  if (cut) {
    n = cap > 4 ? cap - 4 : 0;
    /* Do not split a UTF-8 sequence. */
    while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
      --n;
  }
  char *copy = malloc(n + (cut ? 4 : 1));
  if (!copy)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  memcpy(copy, text, n);
  if (cut)
    memcpy(copy + n, "...", 4);
  else
    copy[n] = '\0';
  free(*dst);
  *dst = copy;
  return LF_OK;
}

lf_build_result_t *lf_build_result_new(void) {
  lf_build_result_t *r = calloc(1, sizeof(*r));
  if (!r)
    return NULL;
  r->message = strdup("");
  r->diagnostics = strdup("");
  r->hint = strdup("");
  if (!r->message || !r->diagnostics || !r->hint) {
    lf_build_result_destroy(r);
    return NULL;
  }
  return r;
}

void lf_build_result_destroy(lf_build_result_t *result) {
  if (!result)
    return;
  free(result->message);
  free(result->diagnostics);
  free(result->hint);
  free(result->kernel_name);
  free(result->chip);
  for (size_t i = 0; i < result->num_params; ++i)
    free(result->params[i].type);
  free(result->params);
  free(result->ptx);
  free(result->cubin);
  free(result->ptxas_info);
  free(result);
}

lf_status_t lf_build_result_fail(lf_build_result_t *result,
                                 lf_build_kind_t kind, const char *fmt, ...) {
  char message[LF_BUILD_MESSAGE_CAP * 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof(message), fmt, ap);
  va_end(ap);
  result->kind = kind;
  LF_RETURN_IF_ERROR(
      lf_set_capped(&result->message, message, LF_BUILD_MESSAGE_CAP));
  if (!result->hint || !result->hint[0])
    LF_RETURN_IF_ERROR(lf_set_capped(&result->hint, lf_build_kind_hint(kind),
                                     LF_BUILD_HINT_CAP));
  return LF_OK;
}

/* ---- Diagnostics --------------------------------------------------------- */

/* Room kept for the "(N more not shown)" line. */
#define SINK_RESERVE 40
/* Widths of one message and of one source excerpt. */
#define MESSAGE_WIDTH 240
#define EXCERPT_WIDTH 100

void lf_diag_sink_init(lf_diag_sink_t *sink, const char *source,
                       size_t source_size, int line_offset) {
  memset(sink, 0, sizeof(*sink));
  lf_strbuf_init(&sink->text, LF_BUILD_DIAGNOSTICS_CAP - SINK_RESERVE);
  sink->source = source;
  sink->source_size = source_size;
  sink->line_offset = line_offset;
}

void lf_diag_sink_free(lf_diag_sink_t *sink) {
  if (sink)
    lf_strbuf_free(&sink->text);
}

/* Length of the valid UTF-8 sequence at p (at most `left` bytes), 0 if
 * invalid. */
static size_t utf8_length(const unsigned char *p, size_t left) {
  size_t n = p[0] < 0x80             ? 1
             : (p[0] & 0xE0) == 0xC0 ? 2
             : (p[0] & 0xF0) == 0xE0 ? 3
             : (p[0] & 0xF8) == 0xF0 ? 4
                                     : 0;
  if (n == 0 || n > left || (n == 2 && p[0] < 0xC2))
    return 0;
  for (size_t i = 1; i < n; ++i)
    if ((p[i] & 0xC0) != 0x80)
      return 0;
  return n;
}

/* Copies `text` up to its first newline and at most `width` bytes into
 * `out`: control characters become spaces and invalid UTF-8 becomes '?',
 * so that the text is safe in JSON and in a prompt. */
static void one_line(const char *text, size_t size, size_t width, char *out,
                     size_t out_size) {
  const unsigned char *t = (const unsigned char *)text;
  size_t o = 0;
  for (size_t i = 0; i < size && t[i] && t[i] != '\n';) {
    size_t n = utf8_length(t + i, size - i);
    if (o + (n ? n : 1) + 4 >= out_size || o >= width) {
      memcpy(out + o, "...", 3);
      o += 3;
      break;
    }
    if (n == 0) {
      out[o++] = '?';
      i += 1;
    } else if (n == 1) {
      out[o++] = (t[i] < 0x20 || t[i] == 0x7f) ? ' ' : (char)t[i];
      i += 1;
    } else {
      memcpy(out + o, t + i, n);
      o += n;
      i += n;
    }
  }
  while (o > 0 && out[o - 1] == ' ')
    --o;
  out[o] = '\0';
}

/* The 1-based line `line` of the source, trimmed, in `out`; "" if none. */
static void source_line(const lf_diag_sink_t *sink, int line, char *out,
                        size_t out_size) {
  out[0] = '\0';
  if (!sink->source || line <= 0)
    return;
  const char *p = sink->source, *end = sink->source + sink->source_size;
  for (int l = 1; l < line && p < end; ++l) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl)
      return;
    p = nl + 1;
  }
  while (p < end && (*p == ' ' || *p == '\t'))
    ++p;
  one_line(p, (size_t)(end - p), EXCERPT_WIDTH, out, out_size);
}

static void sink_append(lf_diag_sink_t *sink, const char *entry) {
  lf_status_t s = lf_strbuf_append_str(&sink->text, entry);
  if (s) {
    ++sink->dropped;
    lf_status_free(s);
  }
}

void lf_diag_sink_add(lf_diag_sink_t *sink, const char *severity, int line,
                      int col, const char *message, size_t message_size) {
  char msg[MESSAGE_WIDTH + 8];
  one_line(message, message_size, MESSAGE_WIDTH, msg, sizeof(msg));
  /* Located entries say where in the reply; the others (LLVM, ptxas, a
   * crashed child) have no place in it. */
  char where[48] = "";
  if (line > 0)
    snprintf(where, sizeof(where), "reply:%d:%d: ", line + sink->line_offset,
             col > 0 ? col : 1);
  char entry[MESSAGE_WIDTH + EXCERPT_WIDTH + 96];
  int n = snprintf(entry, sizeof(entry), "%s%s: %s\n", where, severity, msg);
  bool is_error = strcmp(severity, "error") == 0;
  if (is_error && line > 0) {
    char excerpt[EXCERPT_WIDTH + 8];
    source_line(sink, line, excerpt, sizeof(excerpt));
    if (excerpt[0] && n > 0 && (size_t)n < sizeof(entry))
      snprintf(entry + n, sizeof(entry) - (size_t)n, "  | %s\n", excerpt);
  }
  if (is_error) {
    if (sink->errors == 0) {
      snprintf(sink->first, sizeof(sink->first), "%s%s", where, msg);
      snprintf(sink->first_raw, sizeof(sink->first_raw), "%s", msg);
    }
    ++sink->errors;
  }
  sink_append(sink, entry);
}

void lf_diag_sink_add_output(lf_diag_sink_t *sink, const char *output,
                             size_t size, int max_lines, bool errors_first) {
  int added = 0;
  for (int pass = errors_first ? 0 : 1; pass < 2 && added < max_lines; ++pass) {
    const char *p = output, *end = output + size;
    while (p < end && added < max_lines) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
      char line[MESSAGE_WIDTH + 8];
      one_line(p, len, MESSAGE_WIDTH, line, sizeof(line));
      bool has_error = strstr(line, "error") || strstr(line, "ERROR");
      bool take =
          line[0] && (pass == 0 ? has_error : !errors_first || !has_error);
      if (take) {
        lf_diag_sink_add(sink, has_error ? "error" : "note", 0, 0, line,
                         strlen(line));
        ++added;
      }
      p = nl ? nl + 1 : end;
    }
  }
}

/* The first file:line:col location inside `loc` (through names, call sites
 * and fused locations). */
static bool location_line_col(MlirLocation loc, int *line, int *col,
                              int depth) {
  if (depth > 8 || mlirLocationIsNull(loc))
    return false;
  if (mlirLocationIsAFileLineColRange(loc)) {
    *line = mlirLocationFileLineColRangeGetStartLine(loc);
    *col = mlirLocationFileLineColRangeGetStartColumn(loc);
    return true;
  }
  if (mlirLocationIsAName(loc))
    return location_line_col(mlirLocationNameGetChildLoc(loc), line, col,
                             depth + 1);
  if (mlirLocationIsACallSite(loc))
    return location_line_col(mlirLocationCallSiteGetCaller(loc), line, col,
                             depth + 1);
  if (mlirLocationIsAFused(loc)) {
    intptr_t n = mlirLocationFusedGetNumLocations(loc);
    if (n <= 0 || n > 64)
      return false;
    MlirLocation locs[64];
    mlirLocationFusedGetLocations(loc, locs);
    for (intptr_t i = 0; i < n; ++i)
      if (location_line_col(locs[i], line, col, depth + 1))
        return true;
  }
  return false;
}

static void print_cb(MlirStringRef s, void *user_data) {
  lf_status_free(lf_strbuf_append(user_data, s.data, s.length));
}

static void add_mlir_diagnostic(lf_diag_sink_t *sink, MlirDiagnostic d,
                                const char *severity) {
  lf_strbuf_t msg;
  lf_strbuf_init(&msg, 4096);
  mlirDiagnosticPrint(d, print_cb, &msg);
  int line = 0, col = 0;
  location_line_col(mlirDiagnosticGetLocation(d), &line, &col, 0);
  lf_diag_sink_add(sink, severity, line, col, lf_strbuf_cstr(&msg),
                   lf_strbuf_len(&msg));
  lf_strbuf_free(&msg);
}

MlirLogicalResult lf_diag_sink_handler(MlirDiagnostic diagnostic,
                                       void *user_data) {
  lf_diag_sink_t *sink = user_data;
  MlirDiagnosticSeverity severity = mlirDiagnosticGetSeverity(diagnostic);
  if (severity == MlirDiagnosticError || severity == MlirDiagnosticWarning) {
    add_mlir_diagnostic(sink, diagnostic,
                        severity == MlirDiagnosticError ? "error" : "warning");
    intptr_t notes = mlirDiagnosticGetNumNotes(diagnostic);
    for (intptr_t i = 0; i < notes && i < 2; ++i)
      add_mlir_diagnostic(sink, mlirDiagnosticGetNote(diagnostic, i), "note");
  }
  return mlirLogicalResultSuccess(); /* handled: nothing reaches stderr */
}

char *lf_diag_sink_take(lf_diag_sink_t *sink) {
  if (sink->dropped) {
    /* The reserve keeps room for this line: grow the cap for it. */
    sink->text.cap += SINK_RESERVE;
    lf_status_free(lf_strbuf_appendf(&sink->text, "(%zu more not shown)\n",
                                     sink->dropped));
  }
  return lf_strbuf_take(&sink->text);
}

/* ---- Repair text --------------------------------------------------------- */

lf_status_t lf_build_result_repair_text(const lf_build_result_t *result,
                                        lf_strbuf_t *out) {
  if (!result || result->kind == LF_BUILD_OK)
    return LF_OK;
  lf_strbuf_t text;
  lf_strbuf_init(&text, LF_BUILD_REPAIR_CAP * 2);
  lf_status_free(lf_strbuf_appendf(&text, "Build failed (%s): %s\n",
                                   lf_build_kind_name(result->kind),
                                   result->message ? result->message : ""));
  if (result->diagnostics && result->diagnostics[0])
    lf_status_free(
        lf_strbuf_appendf(&text, "Diagnostics:\n%s", result->diagnostics));
  if (result->hint && result->hint[0])
    lf_status_free(lf_strbuf_appendf(&text, "Hint: %s\n", result->hint));
  char *capped = NULL;
  lf_status_t s =
      lf_set_capped(&capped, lf_strbuf_cstr(&text), LF_BUILD_REPAIR_CAP);
  lf_strbuf_free(&text);
  if (s)
    return s;
  s = lf_strbuf_append_str(out, capped);
  free(capped);
  return s;
}

/* ---- JSON ---------------------------------------------------------------- */

static cJSON *u32_array(const uint32_t v[3]) {
  int a[3] = {(int)v[0], (int)v[1], (int)v[2]};
  return cJSON_CreateIntArray(a, 3);
}

/* Tensor-map entries of "params" (docs/kernel-contract.md, "Tensor
 * maps"): the fields cuTensorMapEncodeTiled needs, row-major. */
static const char *bytes_name(int bytes) {
  switch (bytes) {
  case 0:
    return "none";
  case 32:
    return "32b";
  case 64:
    return "64b";
  case 128:
    return "128b";
  case 256:
    return "256b";
  default:
    return "?";
  }
}

static bool add_tensor_map(cJSON *o, const lf_kernel_param_t *p) {
  const lf_tensor_map_spec_t *m = &p->map;
  int rank = m->rank < 0 ? 0 : m->rank > 5 ? 5 : m->rank;
  bool ok = true;
  ok &= !!cJSON_AddStringToObject(o, "role", "tensor_map");
  ok &= !!cJSON_AddNumberToObject(o, "operand", p->operand);
  ok &= !!cJSON_AddStringToObject(o, "type", p->type ? p->type : "");
  ok &= !!cJSON_AddStringToObject(o, "abi", "tensor_map");
  ok &= !!cJSON_AddStringToObject(o, "dtype", m->dtype);
  cJSON *dims = cJSON_AddArrayToObject(o, "dims");
  cJSON *box = cJSON_AddArrayToObject(o, "box");
  ok &= dims && box;
  for (int d = 0; ok && d < rank; ++d) {
    ok &= cJSON_AddItemToArray(dims, cJSON_CreateNumber((double)m->dims[d]));
    ok &= cJSON_AddItemToArray(box, cJSON_CreateNumber((double)m->box[d]));
  }
  ok &= !!cJSON_AddStringToObject(o, "swizzle", bytes_name(m->swizzle_bytes));
  ok &= !!cJSON_AddStringToObject(o, "l2promo", bytes_name(m->l2promo_bytes));
  ok &= !!cJSON_AddStringToObject(o, "oob", m->oob_nan ? "nan" : "zero");
  ok &= !!cJSON_AddStringToObject(o, "interleave", "none");
  return ok;
}

lf_status_t lf_build_result_to_json(const lf_build_result_t *r,
                                    const char *ptx_path,
                                    const char *cubin_path, char **out_json) {
  *out_json = NULL;
  cJSON *root = cJSON_CreateObject();
  if (!root)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  bool ok = true;
  ok &= !!cJSON_AddBoolToObject(root, "ok", r->kind == LF_BUILD_OK);
  ok &= !!cJSON_AddStringToObject(root, "kind", lf_build_kind_name(r->kind));
  ok &=
      !!cJSON_AddStringToObject(root, "message", r->message ? r->message : "");
  ok &= !!cJSON_AddStringToObject(root, "diagnostics",
                                  r->diagnostics ? r->diagnostics : "");
  ok &= !!cJSON_AddStringToObject(root, "hint", r->hint ? r->hint : "");
  if (r->kernel_name)
    ok &= !!cJSON_AddStringToObject(root, "kernel", r->kernel_name);
  if (r->chip)
    ok &= !!cJSON_AddStringToObject(root, "chip", r->chip);
  if (r->kernel_name) {
    ok &= cJSON_AddItemToObject(root, "block", u32_array(r->block));
    ok &= cJSON_AddItemToObject(root, "grid", u32_array(r->grid));
    ok &= !!cJSON_AddNumberToObject(root, "dynamic_shared_memory",
                                    r->dynamic_shared_bytes);
    cJSON *params = cJSON_AddArrayToObject(root, "params");
    ok &= !!params;
    for (size_t i = 0; ok && i < r->num_params; ++i) {
      const lf_kernel_param_t *p = &r->params[i];
      cJSON *o = cJSON_CreateObject();
      ok &= o && cJSON_AddItemToArray(params, o);
      if (!ok)
        break;
      if (p->is_tensor_map) {
        ok &= add_tensor_map(o, p);
        continue;
      }
      ok &= !!cJSON_AddStringToObject(o, "role",
                                      p->is_output ? "output" : "input");
      ok &= !!cJSON_AddNumberToObject(o, "operand", p->operand);
      ok &= !!cJSON_AddStringToObject(o, "type", p->type ? p->type : "");
      ok &= !!cJSON_AddStringToObject(o, "abi",
                                      p->is_pointer ? "pointer" : "value");
    }
  }
  if (r->ptx)
    ok &= !!cJSON_AddNumberToObject(root, "ptx_size", (double)r->ptx_size);
  if (ptx_path)
    ok &= !!cJSON_AddStringToObject(root, "ptx", ptx_path);
  if (r->cubin)
    ok &= !!cJSON_AddNumberToObject(root, "cubin_size", (double)r->cubin_size);
  if (cubin_path)
    ok &= !!cJSON_AddStringToObject(root, "cubin", cubin_path);
  if (r->ptxas_info)
    ok &= !!cJSON_AddStringToObject(root, "ptxas_info", r->ptxas_info);
  cJSON *ms = cJSON_AddObjectToObject(root, "ms");
  ok &= !!ms;
  if (ms) {
    ok &= !!cJSON_AddNumberToObject(ms, "parse", r->ms_parse);
    ok &= !!cJSON_AddNumberToObject(ms, "contract", r->ms_contract);
    ok &= !!cJSON_AddNumberToObject(ms, "lower", r->ms_lower);
    ok &= !!cJSON_AddNumberToObject(ms, "llvm", r->ms_llvm);
    ok &= !!cJSON_AddNumberToObject(ms, "ptxas", r->ms_ptxas);
    ok &= !!cJSON_AddNumberToObject(ms, "total", r->ms_total);
  }
  char *text = ok ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  if (!text)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  *out_json = text;
  return LF_OK;
}

static const char *get_string(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double get_number(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

static void get_u32x3(const cJSON *o, const char *key, uint32_t out[3]) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
  for (int i = 0; i < 3; ++i) {
    const cJSON *v = cJSON_IsArray(a) ? cJSON_GetArrayItem(a, i) : NULL;
    out[i] =
        cJSON_IsNumber(v) && v->valuedouble >= 0 ? (uint32_t)v->valuedouble : 0;
  }
}

static bool parse_bytes(const char *text, const int *allowed, int *out) {
  if (!text)
    return false;
  if (strcmp(text, "none") == 0)
    return *out = 0, true;
  for (; *allowed; ++allowed) {
    char name[16];
    snprintf(name, sizeof(name), "%db", *allowed);
    if (strcmp(text, name) == 0)
      return *out = *allowed, true;
  }
  return false;
}

/* Reads a "tensor_map" entry of "params"; INVALID_ARGUMENT when a field is
 * missing or out of range, so that a launcher never encodes a map from a
 * half-read entry. */
static lf_status_t parse_tensor_map(const cJSON *o, int index,
                                    lf_kernel_param_t *p) {
  static const int swizzles[] = {32, 64, 128, 0};
  static const int promos[] = {64, 128, 256, 0};
  lf_tensor_map_spec_t *m = &p->map;
  p->is_tensor_map = true;
  p->is_pointer = false;
  p->is_output = false;
  const cJSON *operand = cJSON_GetObjectItemCaseSensitive(o, "operand");
  const char *dtype = get_string(o, "dtype");
  const cJSON *dims = cJSON_GetObjectItemCaseSensitive(o, "dims");
  const cJSON *box = cJSON_GetObjectItemCaseSensitive(o, "box");
  const char *oob = get_string(o, "oob");
  const char *interleave = get_string(o, "interleave");
  int rank = cJSON_IsArray(dims) ? cJSON_GetArraySize(dims) : 0;
  bool ok =
      cJSON_IsNumber(operand) && operand->valuedouble >= 0 &&
      operand->valuedouble < 1e6 && dtype && strlen(dtype) < 8 && rank >= 1 &&
      rank <= 5 && cJSON_IsArray(box) && cJSON_GetArraySize(box) == rank &&
      parse_bytes(get_string(o, "swizzle"), swizzles, &m->swizzle_bytes) &&
      parse_bytes(get_string(o, "l2promo"), promos, &m->l2promo_bytes) && oob &&
      (strcmp(oob, "zero") == 0 || strcmp(oob, "nan") == 0) && interleave &&
      strcmp(interleave, "none") == 0;
  for (int d = 0; ok && d < rank; ++d) {
    const cJSON *v = cJSON_GetArrayItem(dims, d);
    const cJSON *b = cJSON_GetArrayItem(box, d);
    ok = cJSON_IsNumber(v) && v->valuedouble >= 1 &&
         v->valuedouble < 4294967296.0 && cJSON_IsNumber(b) &&
         b->valuedouble >= 1 && b->valuedouble <= 256;
    if (ok) {
      m->dims[d] = (uint64_t)v->valuedouble;
      m->box[d] = (uint32_t)b->valuedouble;
    }
  }
  if (!ok)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "build result: params[%d] is a malformed tensor_map "
                     "entry",
                     index);
  p->operand = (int)operand->valuedouble;
  m->param = p->operand;
  m->rank = rank;
  snprintf(m->dtype, sizeof(m->dtype), "%s", dtype);
  m->oob_nan = strcmp(oob, "nan") == 0;
  return LF_OK;
}

static lf_status_t dup_opt(char **dst, const char *src) {
  if (!src)
    return LF_OK;
  *dst = strdup(src);
  return *dst ? LF_OK
              : LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
}

lf_status_t lf_build_result_from_json(const char *json, size_t size,
                                      lf_build_result_t **out_result) {
  *out_result = NULL;
  cJSON *root = cJSON_ParseWithLength(json, size);
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "build result is not a JSON object");
  }
  lf_status_t s = LF_OK;
  lf_build_result_t *r = lf_build_result_new();
  if (!r) {
    s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out_delete;
  }
  const char *kind = get_string(root, "kind");
  if (kind && strcmp(kind, "internal") == 0) {
    /* The tool could not judge the candidate (bad request, I/O). */
    const char *message = get_string(root, "message");
    s = LF_STATUS(LF_STATUS_INTERNAL, "kernel builder: %s",
                  message ? message : "failed");
    goto out_destroy;
  }
  if (!lf_build_kind_parse(kind, &r->kind)) {
    s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "build result has bad kind '%s'",
                  kind ? kind : "(none)");
    goto out_destroy;
  }
  if ((s = lf_set_capped(&r->message, get_string(root, "message"),
                         LF_BUILD_MESSAGE_CAP)) ||
      (s = lf_set_capped(&r->diagnostics, get_string(root, "diagnostics"),
                         LF_BUILD_DIAGNOSTICS_CAP)) ||
      (s = lf_set_capped(&r->hint, get_string(root, "hint"),
                         LF_BUILD_HINT_CAP)) ||
      (s = dup_opt(&r->kernel_name, get_string(root, "kernel"))) ||
      (s = dup_opt(&r->chip, get_string(root, "chip"))) ||
      (s = dup_opt(&r->ptxas_info, get_string(root, "ptxas_info"))))
    goto out_destroy;
  get_u32x3(root, "block", r->block);
  get_u32x3(root, "grid", r->grid);
  r->dynamic_shared_bytes = (uint32_t)get_number(root, "dynamic_shared_memory");
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "params");
  int n = cJSON_IsArray(params) ? cJSON_GetArraySize(params) : 0;
  if (n > 0) {
    r->params = calloc((size_t)n, sizeof(*r->params));
    if (!r->params) {
      s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
      goto out_destroy;
    }
    r->num_params = (size_t)n;
    for (int i = 0; i < n; ++i) {
      const cJSON *p = cJSON_GetArrayItem(params, i);
      const char *role = get_string(p, "role");
      const char *abi = get_string(p, "abi");
      if (role && strcmp(role, "tensor_map") == 0) {
        if ((s = parse_tensor_map(p, i, &r->params[i])) ||
            (s = dup_opt(&r->params[i].type, get_string(p, "type"))))
          goto out_destroy;
        continue;
      }
      r->params[i].is_output = role && strcmp(role, "output") == 0;
      r->params[i].is_pointer = !abi || strcmp(abi, "pointer") == 0;
      r->params[i].operand = (int)get_number(p, "operand");
      if ((s = dup_opt(&r->params[i].type, get_string(p, "type"))))
        goto out_destroy;
    }
  }
  const cJSON *ms = cJSON_GetObjectItemCaseSensitive(root, "ms");
  r->ms_parse = get_number(ms, "parse");
  r->ms_contract = get_number(ms, "contract");
  r->ms_lower = get_number(ms, "lower");
  r->ms_llvm = get_number(ms, "llvm");
  r->ms_ptxas = get_number(ms, "ptxas");
  r->ms_total = get_number(ms, "total");
  *out_result = r;
  goto out_delete;

out_destroy:
  lf_build_result_destroy(r);
out_delete:
  cJSON_Delete(root);
  return s;
}

lf_status_t lf_build_result_write_dir(const lf_build_result_t *r,
                                      const char *dir, char **out_json) {
  char ptx[4200], cubin[4200], result[4200];
  char *json = NULL;
  if (out_json)
    *out_json = NULL;
  LF_RETURN_IF_ERROR(lf_make_dirs(dir));
  snprintf(ptx, sizeof(ptx), "%s/kernel.ptx", dir);
  snprintf(cubin, sizeof(cubin), "%s/kernel.cubin", dir);
  snprintf(result, sizeof(result), "%s/result.json", dir);
  if (r->ptx)
    LF_RETURN_IF_ERROR(lf_write_file_plain(ptx, r->ptx, r->ptx_size));
  if (r->cubin)
    LF_RETURN_IF_ERROR(lf_write_file_plain(cubin, r->cubin, r->cubin_size));
  LF_RETURN_IF_ERROR(lf_build_result_to_json(
      r, r->ptx ? ptx : NULL, r->cubin ? cubin : NULL, &json));
  lf_status_t st = lf_write_file_plain(result, json, strlen(json));
  if (!st && out_json)
    *out_json = json;
  else
    free(json);
  return st;
}
