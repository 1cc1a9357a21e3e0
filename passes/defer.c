/* defer.c - deferred verification: candidate and fallback behind a runtime
 * guard (see defer.h for the IR, runtime/mgpu/llm_fuse_guard.h for the
 * guard and the blob).
 *
 * The candidate is made by lf_swap_in on a copy of the function, so the
 * launch is written in one place. The guarded body is written as text and
 * parsed in a scratch module (as swap.c does); the blob's bytes go into
 * the llvm.mlir.global afterwards through the C API, never through text.
 */
#include "passes/defer.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/reference.h"
#include "passes/swap.h"

/* Must match runtime/mgpu/llm_fuse_guard.h (not included: the runtime
 * library is not a dependency of the passes). */
#define GUARD_MAGIC "LFGUARD1"
#define GUARD_DECIDE "lf_rt_guard_decide"
#define BLOB_CAP (512u << 20)

static MlirStringRef str(const char *s) {
  return mlirStringRefCreateFromCString(s);
}

static void append_cb(MlirStringRef s, void *user_data) {
  lf_status_free(lf_strbuf_append(user_data, s.data, s.length));
}

static lf_status_t type_text(MlirType t, lf_strbuf_t *out) {
  size_t before = lf_strbuf_len(out);
  mlirTypePrint(t, append_cb, out);
  if (lf_strbuf_len(out) == before)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "type text too long");
  return LF_OK;
}

/* ---- The blob. ---- */

static lf_status_t put_le(lf_strbuf_t *b, uint64_t v, int bytes) {
  unsigned char le[8];
  for (int i = 0; i < bytes; ++i)
    le[i] = (unsigned char)(v >> (8 * i));
  return lf_strbuf_append(b, le, (size_t)bytes);
}

static lf_status_t put_member(lf_strbuf_t *b, uint32_t *count,
                              const char *name, const void *data,
                              size_t size) {
  LF_RETURN_IF_ERROR(put_le(b, strlen(name), 4));
  LF_RETURN_IF_ERROR(lf_strbuf_append(b, name, strlen(name)));
  LF_RETURN_IF_ERROR(put_le(b, size, 8));
  LF_RETURN_IF_ERROR(lf_strbuf_append(b, data, size));
  ++*count;
  return LF_OK;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix);
}

/* Adds the reference folder's plan.json and, per kernel, its .cubin when
 * there is one, else its .ptx (the worker prefers the cubin), in name
 * order, as members `prefix`/<file>; then its opmath truth (truth/, for a
 * subgraph that accumulates in 16 bits) and its wide plan (wide/, for f16
 * results: docs/verification.md) the same way. The kernels' .mlir
 * sources are not needed. */
static lf_status_t put_reference(lf_strbuf_t *b, uint32_t *count,
                                 const char *refdir, const char *prefix) {
  struct dirent **names = NULL;
  int n = scandir(refdir, &names, NULL, alphasort);
  if (n < 0)
    return LF_STATUS(LF_STATUS_NOT_FOUND, "cannot list the staged reference %s",
                     refdir);
  lf_status_t st = LF_OK;
  bool have_plan = false;
  for (int i = 0; i < n && !st; ++i) {
    const char *f = names[i]->d_name;
    bool want = !strcmp(f, "plan.json") || ends_with(f, ".cubin");
    if (ends_with(f, ".ptx")) {
      char cubin[4600];
      snprintf(cubin, sizeof(cubin), "%s/%.*s.cubin", refdir,
               (int)(strlen(f) - 4), f);
      want = access(cubin, R_OK) != 0;
    }
    if (!want)
      continue;
    have_plan |= !strcmp(f, "plan.json");
    char path[4600], member[300];
    snprintf(path, sizeof(path), "%s/%s", refdir, f);
    snprintf(member, sizeof(member), "%s/%s", prefix, f);
    lf_strbuf_t data;
    lf_strbuf_init(&data, 256u << 20);
    st = lf_read_file(path, &data);
    if (!st)
      st = put_member(b, count, member, data.data ? data.data : "",
                      lf_strbuf_len(&data));
    lf_strbuf_free(&data);
  }
  for (int i = 0; i < n; ++i)
    free(names[i]);
  free(names);
  if (!st && !have_plan)
    st = LF_STATUS(LF_STATUS_NOT_FOUND, "no plan.json in %s", refdir);
  /* The opmath truth and the wide (unrounded f16) plan, when staged. */
  static const char *const extra[] = {LF_REFERENCE_TRUTH_DIR,
                                      LF_REFERENCE_WIDE_DIR};
  for (size_t k = 0; k < sizeof(extra) / sizeof(extra[0]) && !st; ++k) {
    char sub[4600], sub_prefix[300];
    snprintf(sub, sizeof(sub), "%s/%s/plan.json", refdir, extra[k]);
    if (access(sub, R_OK) != 0)
      continue;
    snprintf(sub, sizeof(sub), "%s/%s", refdir, extra[k]);
    snprintf(sub_prefix, sizeof(sub_prefix), "%s/%s", prefix, extra[k]);
    st = put_reference(b, count, sub, sub_prefix);
  }
  return st;
}

/* The candidate: its binary, and a result.json naming it relative to its
 * folder, without timings, so that the blob (and the key) depend on the
 * kernel only. The worker reads the binary beside result.json. */
static lf_status_t put_candidate(lf_strbuf_t *b, uint32_t *count,
                                 const lf_build_result_t *build) {
  lf_build_result_t r = *build; /* shallow: only read */
  r.ms_parse = r.ms_contract = r.ms_lower = r.ms_llvm = r.ms_ptxas =
      r.ms_total = 0;
  char *json = NULL;
  LF_RETURN_IF_ERROR(lf_build_result_to_json(
      &r, r.cubin ? NULL : "kernel.ptx", r.cubin ? "kernel.cubin" : NULL,
      &json));
  lf_status_t st = put_member(b, count, "candidate/result.json", json,
                              strlen(json));
  free(json);
  if (!st)
    st = build->cubin ? put_member(b, count, "candidate/kernel.cubin",
                                   build->cubin, build->cubin_size)
                      : put_member(b, count, "candidate/kernel.ptx",
                                   build->ptx, build->ptx_size);
  return st;
}

static uint64_t fnv1a(const void *data, size_t n, uint64_t h) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/* The whole blob into `out`, its key into `key`. */
static lf_status_t make_blob(const char *fname, const lf_build_result_t *build,
                             const char *staged_dir,
                             const lf_defer_options_t *o, lf_strbuf_t *out,
                             char *key, size_t key_n) {
  lf_strbuf_t body;
  lf_strbuf_init(&body, BLOB_CAP);
  uint32_t count = 0;
  char refdir[4200], args[256] = "";
  snprintf(refdir, sizeof(refdir), "%s/reference", staged_dir);
  lf_status_t st = put_reference(&body, &count, refdir, "reference");
  if (!st)
    st = put_candidate(&body, &count, build);
  size_t a = 0;
  if (o->min_speedup > 0)
    a += (size_t)snprintf(args + a, sizeof(args) - a, "--min-speedup\n%.17g\n",
                          o->min_speedup);
  if (o->flops > 0 && a < sizeof(args))
    a += (size_t)snprintf(args + a, sizeof(args) - a, "--flops\n%.17g\n",
                          o->flops);
  if (o->lenient_nonfinite && a < sizeof(args))
    a += (size_t)snprintf(args + a, sizeof(args) - a, "--lenient-nonfinite\n");
  if (o->tf32_k > 0 && a < sizeof(args))
    a += (size_t)snprintf(args + a, sizeof(args) - a, "--tf32-k\n%lld\n",
                          (long long)o->tf32_k);
  if (!st && a)
    st = put_member(&body, &count, "args", args, strlen(args));
  /* The key names the subgraph and hashes what is verified; the record
   * path does not change the verdict and stays out of it. */
  uint64_t h = fnv1a(body.data, lf_strbuf_len(&body), 0xcbf29ce484222325ull);
  snprintf(key, key_n, "%s:%016llx", fname, (unsigned long long)h);
  if (!st)
    st = put_member(&body, &count, "key", key, strlen(key));
  if (!st && o->record_path && *o->record_path)
    st = put_member(&body, &count, "record", o->record_path,
                    strlen(o->record_path));
  if (!st)
    st = lf_strbuf_append(out, GUARD_MAGIC, 8);
  if (!st)
    st = put_le(out, count, 4);
  if (!st)
    st = lf_strbuf_append(out, body.data, lf_strbuf_len(&body));
  lf_strbuf_free(&body);
  return st;
}

/* ---- The IR. ---- */

static bool symbol_free(MlirOperation module, const char *name) {
  MlirSymbolTable t = mlirSymbolTableCreate(module);
  bool free_ = mlirOperationIsNull(mlirSymbolTableLookup(t, str(name)));
  mlirSymbolTableDestroy(t);
  return free_;
}

/* Drops the outliner's llm_fuse.* attributes from a copy (it is not a
 * subgraph of its own) and marks its role. */
static void mark_copy(MlirOperation op, const char *role) {
  for (;;) {
    intptr_t n = mlirOperationGetNumAttributes(op), i;
    char name[128] = "";
    for (i = 0; i < n; ++i) {
      MlirStringRef s = mlirIdentifierStr(mlirOperationGetAttribute(op, i).name);
      if (s.length > 9 && s.length < sizeof(name) &&
          !strncmp(s.data, "llm_fuse.", 9)) {
        memcpy(name, s.data, s.length);
        name[s.length] = '\0';
        break;
      }
    }
    if (i == n)
      break;
    mlirOperationRemoveAttributeByName(op, str(name));
  }
  MlirContext ctx = mlirOperationGetContext(op);
  mlirOperationSetAttributeByName(op, str(LF_ATTR_GUARD_ROLE),
                                  mlirStringAttrGet(ctx, str(role)));
}

static lf_status_t types_text(MlirType ft, bool results, lf_strbuf_t *t) {
  intptr_t n = results ? mlirFunctionTypeGetNumResults(ft)
                       : mlirFunctionTypeGetNumInputs(ft);
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, "("));
  for (intptr_t i = 0; i < n; ++i) {
    if (i)
      LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, ", "));
    LF_RETURN_IF_ERROR(type_text(results ? mlirFunctionTypeGetResult(ft, i)
                                         : mlirFunctionTypeGetInput(ft, i),
                                 t));
  }
  return lf_strbuf_append_str(t, ")");
}

/* One branch of the scf.if: call `callee`, yield its results. */
static lf_status_t branch_text(const char *callee, const char *v, MlirType ft,
                               lf_strbuf_t *t) {
  intptr_t n_in = mlirFunctionTypeGetNumInputs(ft);
  intptr_t n_out = mlirFunctionTypeGetNumResults(ft);
  LF_RETURN_IF_ERROR(lf_strbuf_appendf(t, "    %%%s:%ld = func.call @%s(", v,
                                       (long)n_out, callee));
  for (intptr_t i = 0; i < n_in; ++i)
    LF_RETURN_IF_ERROR(
        lf_strbuf_appendf(t, "%s%%a%ld", i ? ", " : "", (long)i));
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, ") : "));
  LF_RETURN_IF_ERROR(types_text(ft, false, t));
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, " -> "));
  LF_RETURN_IF_ERROR(types_text(ft, true, t));
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, "\n    scf.yield "));
  for (intptr_t i = 0; i < n_out; ++i)
    LF_RETURN_IF_ERROR(
        lf_strbuf_appendf(t, "%s%%%s#%ld", i ? ", " : "", v, (long)i));
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, " : "));
  for (intptr_t i = 0; i < n_out; ++i) {
    if (i)
      LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, ", "));
    LF_RETURN_IF_ERROR(type_text(mlirFunctionTypeGetResult(ft, i), t));
  }
  return lf_strbuf_append_str(t, "\n");
}

/* The scratch module: the guarded function, the blob's global (empty:
 * filled in afterwards) and the guard's declaration. */
static lf_status_t guard_text(const char *fname, MlirType ft, size_t blob_size,
                              lf_strbuf_t *t) {
  intptr_t n_in = mlirFunctionTypeGetNumInputs(ft);
  intptr_t n_out = mlirFunctionTypeGetNumResults(ft);
  LF_RETURN_IF_ERROR(
      lf_strbuf_appendf(t, "module {\nfunc.func private @%s(", fname));
  for (intptr_t i = 0; i < n_in; ++i) {
    LF_RETURN_IF_ERROR(
        lf_strbuf_appendf(t, "%s%%a%ld: ", i ? ", " : "", (long)i));
    LF_RETURN_IF_ERROR(type_text(mlirFunctionTypeGetInput(ft, i), t));
  }
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, ") -> "));
  LF_RETURN_IF_ERROR(types_text(ft, true, t));
  LF_RETURN_IF_ERROR(lf_strbuf_appendf(
      t,
      " {\n"
      "  %%blob = llvm.mlir.addressof @%s_guard_blob : !llvm.ptr\n"
      "  %%size = arith.constant %zu : i64\n"
      "  %%state = func.call @" GUARD_DECIDE "(%%blob, %%size) : "
      "(!llvm.ptr, i64) -> i32\n"
      "  %%promoted_state = arith.constant 1 : i32\n"
      "  %%promoted = arith.cmpi eq, %%state, %%promoted_state : i32\n"
      "  %%r:%ld = scf.if %%promoted -> ",
      fname, blob_size, (long)n_out));
  LF_RETURN_IF_ERROR(types_text(ft, true, t));
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, " {\n"));
  char callee[300];
  snprintf(callee, sizeof(callee), "%s_candidate", fname);
  LF_RETURN_IF_ERROR(branch_text(callee, "c", ft, t));
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, "  } else {\n"));
  snprintf(callee, sizeof(callee), "%s_fallback", fname);
  LF_RETURN_IF_ERROR(branch_text(callee, "f", ft, t));
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, "  }\n  return "));
  for (intptr_t i = 0; i < n_out; ++i)
    LF_RETURN_IF_ERROR(
        lf_strbuf_appendf(t, "%s%%r#%ld", i ? ", " : "", (long)i));
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, " : "));
  for (intptr_t i = 0; i < n_out; ++i) {
    if (i)
      LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, ", "));
    LF_RETURN_IF_ERROR(type_text(mlirFunctionTypeGetResult(ft, i), t));
  }
  LF_RETURN_IF_ERROR(lf_strbuf_appendf(
      t,
      "\n}\n"
      "llvm.mlir.global private constant @%s_guard_blob(\"\") "
      "{addr_space = 0 : i32} : !llvm.array<0 x i8>\n"
      "func.func private @" GUARD_DECIDE "(!llvm.ptr, i64) -> i32\n",
      fname));
  /* Declarations of the callees, for the parser's verifier only. */
  for (int i = 0; i < 2; ++i) {
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(t, "func.func private @%s_%s", fname,
                                         i ? "fallback" : "candidate"));
    LF_RETURN_IF_ERROR(types_text(ft, false, t));
    LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, " -> "));
    LF_RETURN_IF_ERROR(types_text(ft, true, t));
    LF_RETURN_IF_ERROR(lf_strbuf_append_str(t, "\n"));
  }
  return lf_strbuf_append_str(t, "}\n");
}

/* Whether `func` can be guarded: named, with results, not guarded yet,
 * and the names the guard needs are free. Fills the names. */
static lf_status_t check_guardable(MlirOperation module, MlirOperation func,
                                   char *fname, size_t fname_n, char *fb_name,
                                   char *cand_name, char *blob_name,
                                   size_t name_n) {
  MlirAttribute sym = mlirOperationGetAttributeByName(func, str("sym_name"));
  if (!mlirAttributeIsAString(sym))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "the function has no name");
  MlirStringRef fname_ref = mlirStringAttrGetValue(sym);
  if (fname_ref.length >= fname_n)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "function name too long");
  memcpy(fname, fname_ref.data, fname_ref.length);
  fname[fname_ref.length] = '\0';
  snprintf(fb_name, name_n, "%s_fallback", fname);
  snprintf(cand_name, name_n, "%s_candidate", fname);
  snprintf(blob_name, name_n, "%s_guard_blob", fname);
  const char *names[] = {fb_name, cand_name, blob_name};
  for (int i = 0; i < 3; ++i)
    if (!symbol_free(module, names[i]))
      return LF_STATUS(LF_STATUS_ALREADY_EXISTS,
                       "cannot guard @%s: the module already has a symbol "
                       "@%s (guarded twice?)",
                       fname, names[i]);
  if (!mlirAttributeIsNull(
          mlirOperationGetAttributeByName(func, str(LF_ATTR_GUARD_KEY))))
    return LF_STATUS(LF_STATUS_ALREADY_EXISTS,
                     "cannot guard @%s: it is a guard already", fname);
  MlirAttribute fta =
      mlirOperationGetAttributeByName(func, str("function_type"));
  if (!mlirAttributeIsAType(fta) ||
      mlirFunctionTypeGetNumResults(mlirTypeAttrGetValue(fta)) == 0)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "cannot guard @%s: it has no results", fname);
  return LF_OK;
}

lf_status_t lf_defer_in(MlirOperation module, MlirOperation func,
                        const lf_build_result_t *build, const char *staged_dir,
                        const lf_defer_options_t *opts) {
  lf_defer_options_t defaults = {0};
  const lf_defer_options_t *o = opts ? opts : &defaults;
  if (!build || build->kind != LF_BUILD_OK || !build->kernel_name ||
      (!build->cubin && !build->ptx))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "only a successfully built kernel can be deferred");
  MlirContext ctx = mlirOperationGetContext(func);
  char fname[200], fb_name[256], cand_name[256], blob_name[256];
  LF_RETURN_IF_ERROR(check_guardable(module, func, fname, sizeof(fname),
                                     fb_name, cand_name, blob_name,
                                     sizeof(fb_name)));
  MlirType ft = mlirTypeAttrGetValue(
      mlirOperationGetAttributeByName(func, str("function_type")));

  char key[300];
  lf_strbuf_t blob, text;
  lf_strbuf_init(&blob, BLOB_CAP);
  lf_strbuf_init(&text, 1 << 20);
  MlirOperation fallback = {NULL}, candidate = {NULL};
  MlirModule scratch = {NULL};
  lf_status_t st =
      make_blob(fname, build, staged_dir, o, &blob, key, sizeof(key));
  if (st)
    goto out_free;
  st = guard_text(fname, ft, lf_strbuf_len(&blob), &text);
  if (st)
    goto out_free;
  scratch = mlirModuleCreateParse(ctx, str(lf_strbuf_cstr(&text)));
  if (mlirModuleIsNull(scratch)) {
    st = LF_STATUS(LF_STATUS_INTERNAL,
                   "the guard of @%s did not parse (see the diagnostic above)",
                   fname);
    goto out_free;
  }

  /* The two copies, after the function: the fallback as it is, the
   * candidate swapped (its gpu.binary lands after it). */
  MlirBlock parent = mlirOperationGetBlock(func);
  fallback = mlirOperationClone(func);
  candidate = mlirOperationClone(func);
  mlirOperationSetAttributeByName(fallback, str("sym_name"),
                                  mlirStringAttrGet(ctx, str(fb_name)));
  mlirOperationSetAttributeByName(candidate, str("sym_name"),
                                  mlirStringAttrGet(ctx, str(cand_name)));
  mark_copy(fallback, "fallback");
  mark_copy(candidate, "candidate");
  mlirBlockInsertOwnedOperationAfter(parent, func, candidate);
  mlirBlockInsertOwnedOperationAfter(parent, func, fallback);
  if ((st = lf_swap_in(module, candidate, build))) {
    mlirOperationDestroy(candidate);
    mlirOperationDestroy(fallback);
    goto out_free;
  }

  /* The guarded body; the blob's bytes and type; the declaration once. */
  MlirBlock sbody = mlirModuleGetBody(scratch);
  MlirOperation new_func = mlirBlockGetFirstOperation(sbody);
  MlirOperation global = mlirOperationGetNextInBlock(new_func);
  MlirOperation decl = mlirOperationGetNextInBlock(global);
  char array_type[64];
  snprintf(array_type, sizeof(array_type), "!llvm.array<%zu x i8>",
           lf_strbuf_len(&blob));
  mlirOperationSetAttributeByName(
      global, str("global_type"),
      mlirTypeAttrGet(mlirTypeParseGet(ctx, str(array_type))));
  mlirOperationSetAttributeByName(
      global, str("value"),
      mlirStringAttrGet(ctx, mlirStringRefCreate(blob.data,
                                                 lf_strbuf_len(&blob))));
  mlirRegionTakeBody(mlirOperationGetRegion(func, 0),
                     mlirOperationGetRegion(new_func, 0));
  mlirOperationMoveBefore(global, func);
  if (symbol_free(module, GUARD_DECIDE))
    mlirOperationMoveBefore(decl, func);
  mlirOperationSetAttributeByName(func, str(LF_ATTR_GUARD_KEY),
                                  mlirStringAttrGet(ctx, str(key)));
  mlirOperationSetAttributeByName(module, str("gpu.container_module"),
                                  mlirUnitAttrGet(ctx));

out_free:
  if (!mlirModuleIsNull(scratch))
    mlirModuleDestroy(scratch);
  lf_strbuf_free(&text);
  lf_strbuf_free(&blob);
  return st;
}

lf_status_t lf_defer_stage_and_guard(MlirOperation module, MlirOperation func,
                                     const lf_build_result_t *build,
                                     const lf_defer_options_t *opts) {
  lf_defer_options_t defaults = {0};
  const lf_defer_options_t *o = opts ? opts : &defaults;
  const char *chip = o->chip && *o->chip ? o->chip : "sm_90";
  if (!build || build->kind != LF_BUILD_OK)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "only a successfully built kernel can be deferred");
  {
    char f[200], a[256], b[256], c[256];
    LF_RETURN_IF_ERROR(
        check_guardable(module, func, f, sizeof(f), a, b, c, sizeof(a)));
  }
  const char *tmp = getenv("TMPDIR");
  char dir[4096], refdir[4200], canddir[4200];
  snprintf(dir, sizeof(dir), "%s/llm-fuse-defer.XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir))
    return LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot create a staging folder %s",
                     dir);
  snprintf(refdir, sizeof(refdir), "%s/reference", dir);
  snprintf(canddir, sizeof(canddir), "%s/candidate", dir);

  lf_reference_t ref = {0};
  lf_status_t st = lf_reference_lower(func, &ref);
  if (!st)
    st = lf_make_dirs(refdir);
  if (!st)
    st = lf_reference_stage(&ref, chip, refdir, true, NULL);
  lf_reference_free(&ref);
  if (st)
    st = lf_status_annotate(st, "staging the reference of the guard");
  if (!st)
    st = lf_build_result_write_dir(build, canddir, NULL);
  if (!st)
    st = lf_defer_in(module, func, build, dir, o);
  if (o->keep_temps)
    LF_LOG_INFO("deferred verification: staged in %s", dir);
  else
    lf_remove_tree(dir);
  return st;
}
