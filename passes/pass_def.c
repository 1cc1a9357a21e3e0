/* pass_def.c - option tables of C passes, and the C API external-pass host. */
#include "passes/pass_def.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "dialect_bridge/bridge.h"
#include "mlir-c/Support.h"

#define FIELD(options, opt, type) ((type *)((char *)(options) + (opt)->offset))

const lf_option_def_t *lf_pass_find_option(const lf_pass_def_t *def,
                                           const char *name) {
  for (size_t i = 0; i < def->num_options; ++i)
    if (strcmp(def->options[i].name, name) == 0)
      return &def->options[i];
  return NULL;
}

/* "a|b|c" for error messages. */
static void list_choices(const lf_option_def_t *opt, char *out, size_t size) {
  out[0] = '\0';
  size_t used = 0;
  for (const char *const *c = opt->choices; c && *c; ++c) {
    int n = snprintf(out + used, size - used, "%s%s", c == opt->choices ? "" : "|",
                     *c);
    if (n < 0 || (size_t)n >= size - used)
      break;
    used += (size_t)n;
  }
}

static lf_status_t parse_bool(const char *text, bool *out) {
  static const char *const yes[] = {"true", "1", "on", "yes"};
  static const char *const no[] = {"false", "0", "off", "no"};
  for (size_t i = 0; i < 4; ++i) {
    if (strcmp(text, yes[i]) == 0) {
      *out = true;
      return LF_OK;
    }
    if (strcmp(text, no[i]) == 0) {
      *out = false;
      return LF_OK;
    }
  }
  return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "expected true or false");
}

/* Parses and validates `value` for `opt` into `options`; all or nothing. */
static lf_status_t set_option(const lf_option_def_t *opt, void *options,
                              const char *value) {
  char *end = NULL;
  switch (opt->type) {
  case LF_OPTION_STRING: {
    if (opt->choices) {
      bool found = false;
      for (const char *const *c = opt->choices; *c && !found; ++c)
        found = strcmp(*c, value) == 0;
      if (!found) {
        char choices[256];
        list_choices(opt, choices, sizeof(choices));
        return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "expected one of %s",
                         choices);
      }
    }
    char *copy = strdup(value);
    if (!copy)
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    char **slot = FIELD(options, opt, char *);
    free(*slot);
    *slot = copy;
    return LF_OK;
  }
  case LF_OPTION_INT: {
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (errno || end == value || *end)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "expected an integer");
    if ((double)v < opt->min || (double)v > opt->max)
      return LF_STATUS(LF_STATUS_OUT_OF_RANGE, "expected an integer in [%g, %g]",
                       opt->min, opt->max);
    *FIELD(options, opt, int64_t) = v;
    return LF_OK;
  }
  case LF_OPTION_DOUBLE: {
    errno = 0;
    double v = strtod(value, &end);
    if (errno || end == value || *end || !isfinite(v))
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "expected a finite number");
    if (v < opt->min || v > opt->max)
      return LF_STATUS(LF_STATUS_OUT_OF_RANGE, "expected a number in [%g, %g]",
                       opt->min, opt->max);
    *FIELD(options, opt, double) = v;
    return LF_OK;
  }
  case LF_OPTION_BOOL:
    return parse_bool(value, FIELD(options, opt, bool));
  }
  return LF_STATUS(LF_STATUS_INTERNAL, "bad option type %d", (int)opt->type);
}

lf_status_t lf_pass_options_set(const lf_pass_def_t *def, void *options,
                                const char *name, const char *value) {
  const lf_option_def_t *opt = lf_pass_find_option(def, name);
  if (!opt) {
    lf_strbuf_t known;
    lf_strbuf_init(&known, 4096);
    for (size_t i = 0; i < def->num_options; ++i)
      lf_status_free(lf_strbuf_appendf(&known, "%s%s", i ? ", " : "",
                                       def->options[i].name));
    lf_status_t s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                              "%s: unknown option '%s' (known: %s)",
                              def->argument, name, lf_strbuf_cstr(&known));
    lf_strbuf_free(&known);
    return s;
  }
  lf_status_t s = set_option(opt, options, value);
  if (s)
    s = lf_status_annotate(s, "%s: bad value '%s' for option '%s'",
                           def->argument, value, name);
  return s;
}

lf_status_t lf_pass_options_init(const lf_pass_def_t *def, void *options) {
  memset(options, 0, def->options_size);
  for (size_t i = 0; i < def->num_options; ++i) {
    lf_status_t s = set_option(&def->options[i], options,
                               def->options[i].default_text);
    if (s) {
      lf_pass_options_free(def, options);
      return lf_status_annotate(s, "%s: default of option '%s'", def->argument,
                                def->options[i].name);
    }
  }
  return LF_OK;
}

void lf_pass_options_free(const lf_pass_def_t *def, void *options) {
  if (!options)
    return;
  for (size_t i = 0; i < def->num_options; ++i)
    if (def->options[i].type == LF_OPTION_STRING)
      free(*FIELD(options, &def->options[i], char *));
  memset(options, 0, def->options_size);
}

lf_status_t lf_pass_options_copy(const lf_pass_def_t *def, void *dst,
                                 const void *src) {
  memcpy(dst, src, def->options_size);
  for (size_t i = 0; i < def->num_options; ++i)
    if (def->options[i].type == LF_OPTION_STRING)
      *FIELD(dst, &def->options[i], char *) = NULL;
  for (size_t i = 0; i < def->num_options; ++i) {
    const lf_option_def_t *opt = &def->options[i];
    if (opt->type != LF_OPTION_STRING)
      continue;
    char *copy = strdup(*FIELD(src, opt, char *const));
    if (!copy) {
      lf_pass_options_free(def, dst);
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    }
    *FIELD(dst, opt, char *) = copy;
  }
  return LF_OK;
}

/* Reads one value: quoted with '' or "", braced with {} (nesting allowed), or
 * bare up to whitespace. Advances *p past it. */
static lf_status_t read_value(const char **p, lf_strbuf_t *out) {
  const char *s = *p;
  if (*s == '\'' || *s == '"') {
    char quote = *s++;
    const char *end = strchr(s, quote);
    if (!end)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "unterminated %c quote",
                       quote);
    LF_RETURN_IF_ERROR(lf_strbuf_append(out, s, (size_t)(end - s)));
    *p = end + 1;
    return LF_OK;
  }
  if (*s == '{') {
    int depth = 0;
    const char *start = s + 1;
    for (; *s; ++s) {
      depth += *s == '{';
      depth -= *s == '}';
      if (depth == 0)
        break;
    }
    if (!*s)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "unterminated '{'");
    LF_RETURN_IF_ERROR(lf_strbuf_append(out, start, (size_t)(s - start)));
    *p = s + 1;
    return LF_OK;
  }
  const char *start = s;
  while (*s && !isspace((unsigned char)*s))
    ++s;
  LF_RETURN_IF_ERROR(lf_strbuf_append(out, start, (size_t)(s - start)));
  *p = s;
  return LF_OK;
}

lf_status_t lf_pass_options_parse(const lf_pass_def_t *def, void *options,
                                  const char *text) {
  lf_status_t status = LF_OK;
  lf_strbuf_t key, value;
  lf_strbuf_init(&key, 256);
  lf_strbuf_init(&value, 64 * 1024);
  const char *p = text ? text : "";
  for (;;) {
    while (isspace((unsigned char)*p))
      ++p;
    if (!*p)
      break;
    lf_strbuf_reset(&key);
    lf_strbuf_reset(&value);
    const char *start = p;
    while (*p && *p != '=' && !isspace((unsigned char)*p))
      ++p;
    status = lf_strbuf_append(&key, start, (size_t)(p - start));
    if (status)
      goto out;
    if (*p == '=') {
      ++p;
      status = read_value(&p, &value);
      if (status) {
        status = lf_status_annotate(status, "%s: option '%s'", def->argument,
                                    lf_strbuf_cstr(&key));
        goto out;
      }
    } else {
      /* A bare name sets a boolean option. */
      const lf_option_def_t *opt = lf_pass_find_option(def, lf_strbuf_cstr(&key));
      if (opt && opt->type != LF_OPTION_BOOL) {
        status = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                           "%s: option '%s' needs a value", def->argument,
                           lf_strbuf_cstr(&key));
        goto out;
      }
      status = lf_strbuf_append_str(&value, "true");
      if (status)
        goto out;
    }
    status = lf_pass_options_set(def, options, lf_strbuf_cstr(&key),
                                 lf_strbuf_cstr(&value));
    if (status)
      goto out;
  }
out:
  lf_strbuf_free(&value);
  lf_strbuf_free(&key);
  return status;
}

/* ---- The C API external-pass host. ---- */

typedef struct external_state_s {
  const lf_pass_def_t *def;
  void *options;
} external_state_t;

static void external_free(external_state_t *state) {
  if (!state)
    return;
  lf_pass_options_free(state->def, state->options);
  free(state->options);
  free(state);
}

static external_state_t *external_new(const lf_pass_def_t *def,
                                      const void *options_or_null,
                                      lf_status_t *out_status) {
  external_state_t *state = calloc(1, sizeof(*state));
  if (!state)
    goto out_oom;
  state->def = def;
  state->options = calloc(1, def->options_size);
  if (!state->options)
    goto out_free_state;
  *out_status = options_or_null
                    ? lf_pass_options_copy(def, state->options, options_or_null)
                    : lf_pass_options_init(def, state->options);
  if (*out_status)
    goto out_free_options;
  return state;

out_free_options:
  free(state->options);
out_free_state:
  free(state);
  return NULL;
out_oom:
  *out_status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  return NULL;
}

static void external_construct(void *user_data) { (void)user_data; }

static void external_destruct(void *user_data) { external_free(user_data); }

static MlirLogicalResult external_initialize(MlirContext ctx, void *user_data) {
  (void)ctx;
  (void)user_data;
  return mlirLogicalResultSuccess();
}

static void *external_clone(void *user_data) {
  external_state_t *state = user_data;
  lf_status_t s = LF_OK;
  external_state_t *copy = external_new(state->def, state->options, &s);
  /* The C API has no way to fail a clone; a NULL copy would crash in run, so
   * report and fall back to sharing nothing: the run callback checks. */
  lf_status_free(s);
  return copy;
}

static void append_text(MlirStringRef s, void *user_data) {
  lf_status_free(lf_strbuf_append(user_data, s.data, s.length));
}

/* Runs def->pre_pipeline (if any) on `op` with a pass manager of its own. */
static lf_status_t run_pre_pipeline(const lf_pass_def_t *def, MlirOperation op,
                                    const void *options) {
  const char *pipeline = def->pre_pipeline ? def->pre_pipeline(op, options)
                                           : NULL;
  if (!pipeline)
    return LF_OK;
  lf_status_t status = LF_OK;
  lf_strbuf_t err;
  lf_strbuf_init(&err, 4096);
  MlirPassManager pm = mlirPassManagerCreateOnOperation(
      mlirOperationGetContext(op), mlirStringRefCreateFromCString(def->op_name));
  if (mlirLogicalResultIsFailure(mlirParsePassPipeline(
          mlirPassManagerGetAsOpPassManager(pm),
          mlirStringRefCreateFromCString(pipeline), append_text, &err)) ||
      mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, op)))
    status = LF_STATUS(LF_STATUS_INTERNAL, "%s: the pipeline '%s' failed%s%s",
                       def->argument, pipeline, lf_strbuf_len(&err) ? ": " : "",
                       lf_strbuf_cstr(&err));
  mlirPassManagerDestroy(pm);
  lf_strbuf_free(&err);
  return status;
}

static void external_run(MlirOperation op, MlirExternalPass pass,
                         void *user_data) {
  external_state_t *state = user_data;
  lf_status_t s = state ? run_pre_pipeline(state->def, op, state->options)
                        : LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED,
                                    "out of memory cloning pass state");
  if (!s)
    s = state->def->run(op, state->options);
  if (s) {
    lf_emit_status(mlirOperationGetLocation(op), s);
    lf_status_free(s);
    mlirExternalPassSignalFailure(pass);
  }
}

lf_status_t lf_pass_create_external(const lf_pass_def_t *def,
                                    const char *options_text,
                                    MlirPass *out_pass) {
  lf_status_t s = LF_OK;
  external_state_t *state = external_new(def, NULL, &s);
  if (!state)
    return s;
  s = lf_pass_options_parse(def, state->options, options_text);
  if (s) {
    external_free(state);
    return s;
  }
  MlirExternalPassCallbacks callbacks = {
      .construct = external_construct,
      .destruct = external_destruct,
      .initialize = external_initialize,
      .clone = external_clone,
      .run = external_run,
  };
  *out_pass = mlirCreateExternalPass(
      mlirTypeIDCreate(def), mlirStringRefCreateFromCString(def->name),
      mlirStringRefCreateFromCString(def->argument),
      mlirStringRefCreateFromCString(def->description),
      mlirStringRefCreateFromCString(def->op_name), 0, NULL, callbacks, state);
  return LF_OK;
}
