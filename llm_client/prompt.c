/* prompt.c - loading the prompt templates and filling them for a subgraph.
 *
 * Templates are read once per set, split at their "---" header line and
 * checked for unknown placeholders. Filling is plain substitution of
 * {{name}}; the values (subgraph text, error text, examples) are made safe
 * for a fenced block before they go in. The first request's examples are
 * retrieved from the pattern table when the caller gives one, and filled
 * up from examples.json (docs/pattern-table.md, "Retrieval").
 */
#include "llm_client/prompt.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/sha256.h"
#include "llm_client/datadir.h"
#include "llm_client/tune.h"

#ifndef LF_PROMPTS_DIR
#define LF_PROMPTS_DIR "llm_client/prompts"
#endif

#define TEMPLATE_CAP ((size_t)256 << 10)
#define EXAMPLES_JSON_CAP ((size_t)1 << 20)

typedef struct example_s {
  char *subgraph, *fingerprint, *klass, *dtype, *signature, *kernel, *file,
      *sha256;
  char **chips;
  size_t chip_count;
  size_t bytes;
} example_t;

struct lf_prompt_set_s {
  char *dir;
  char *system, *kernel, *repair, *refine, *adapt, *contract; /* bodies */
  char *tma; /* tensor maps: the first request's {{tma}} on sm_90+ */
  example_t *examples;
  size_t example_count;
  char version[32];
};

/* ---- Loading ------------------------------------------------------------*/

static const char *const kernel_names[] = {
    "gpu",         "arch",     "class",    "name",     "signature", "operands",
    "kernel_args", "subgraph", "contract", "examples", "tma",       NULL};
static const char *const repair_names[] = {"attempt", "max_attempts", "error",
                                           "name", NULL};
static const char *const refine_names[] = {
    "round",       "max_rounds",     "status",   "best_ms", "fallback_ms",
    "roofline_ms", "roofline_basis", "fraction", "name",    "tune_example",
    NULL};
static const char *const adapt_names[] = {
    "gpu",       "arch",        "class",           "name",
    "signature", "operands",    "kernel_args",     "subgraph",
    "contract",  "from",        "verified_at",     "sizes",
    "reason",    "base_kernel", "template_syntax", NULL};
static const char *const no_names[] = {NULL};

/* Checks that every {{x}} in `body` names one of `names`. */
static lf_status_t check_placeholders(const char *path, const char *body,
                                      const char *const *names) {
  for (const char *p = strstr(body, "{{"); p; p = strstr(p + 2, "{{")) {
    const char *end = strstr(p + 2, "}}");
    if (!end)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "%s: unclosed placeholder at byte %zu", path,
                       (size_t)(p - body));
    size_t n = (size_t)(end - p - 2);
    bool known = false;
    for (const char *const *k = names; *k; ++k)
      if (strlen(*k) == n && memcmp(*k, p + 2, n) == 0)
        known = true;
    if (!known)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "%s: unknown placeholder {{%.*s}}", path,
                       (int)(n > 40 ? 40 : n), p + 2);
  }
  return LF_OK;
}

/* Reads <dir>/<file>, feeds it to the digest text, and returns the body
 * after the "---" line (heap; free()). */
static lf_status_t load_template(const char *dir, const char *file,
                                 const char *const *names, lf_strbuf_t *digest,
                                 char **out_body) {
  *out_body = NULL;
  lf_strbuf_t path, text;
  lf_strbuf_init(&path, 8192);
  lf_strbuf_init(&text, TEMPLATE_CAP);
  lf_status_t s = lf_strbuf_appendf(&path, "%s/%s", dir, file);
  if (!s)
    s = lf_read_file(lf_strbuf_cstr(&path), &text);
  if (s) {
    s = lf_status_annotate(s, "prompt template %s", lf_strbuf_cstr(&path));
    goto out_free;
  }
  s = lf_strbuf_appendf(digest, "%s=%zu:", file, lf_strbuf_len(&text));
  if (!s)
    s = lf_strbuf_append(digest, text.data, lf_strbuf_len(&text));
  if (s)
    goto out_free;
  const char *t = lf_strbuf_cstr(&text);
  const char *body = NULL;
  for (const char *line = t; *line;) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    if (n == 3 && memcmp(line, "---", 3) == 0) {
      body = nl ? nl + 1 : line + n;
      break;
    }
    if (!nl)
      break;
    line = nl + 1;
  }
  if (!body) {
    s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                  "prompt template %s has no \"---\" line ending its header",
                  lf_strbuf_cstr(&path));
    goto out_free;
  }
  s = check_placeholders(lf_strbuf_cstr(&path), body, names);
  if (s)
    goto out_free;
  *out_body = strdup(body);
  if (!*out_body)
    s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
out_free:
  lf_strbuf_free(&text);
  lf_strbuf_free(&path);
  return s;
}

static void example_clear(example_t *e) {
  free(e->subgraph), free(e->fingerprint), free(e->klass), free(e->dtype);
  free(e->signature), free(e->kernel), free(e->file), free(e->sha256);
  for (size_t i = 0; i < e->chip_count; ++i)
    free(e->chips[i]);
  free(e->chips);
}

static char *json_string(const cJSON *obj, const char *name) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);
  return cJSON_IsString(item) && item->valuestring ? strdup(item->valuestring)
                                                   : NULL;
}

static lf_status_t parse_examples(lf_prompt_set_t *set, const char *path,
                                  const char *text, size_t len) {
  cJSON *root = cJSON_ParseWithLength(text, len);
  if (!root)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "%s is not JSON", path);
  lf_status_t s = LF_OK;
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "examples");
  if (!cJSON_IsString(schema) ||
      strcmp(schema->valuestring, "llm-fuse-prompt-examples/1") != 0 ||
      !cJSON_IsArray(list)) {
    s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                  "%s: expected schema llm-fuse-prompt-examples/1 with an "
                  "\"examples\" array",
                  path);
    goto out_delete;
  }
  size_t n = (size_t)cJSON_GetArraySize(list);
  set->examples = calloc(n ? n : 1, sizeof(*set->examples));
  if (!set->examples) {
    s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out_delete;
  }
  const cJSON *item;
  cJSON_ArrayForEach(item, list) {
    example_t *e = &set->examples[set->example_count++];
    e->subgraph = json_string(item, "subgraph");
    e->fingerprint = json_string(item, "fingerprint");
    e->klass = json_string(item, "class");
    e->dtype = json_string(item, "dtype");
    e->signature = json_string(item, "signature");
    e->kernel = json_string(item, "kernel");
    e->file = json_string(item, "file");
    e->sha256 = json_string(item, "sha256");
    const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(item, "bytes");
    const cJSON *chips = cJSON_GetObjectItemCaseSensitive(item, "chips");
    if (!e->subgraph || !e->fingerprint || !e->klass || !e->dtype ||
        !e->signature || !e->kernel || !e->file || !e->sha256 ||
        !cJSON_IsNumber(bytes) || bytes->valuedouble < 0 ||
        !cJSON_IsArray(chips) || e->file[0] == '/') {
      s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                    "%s: example %zu lacks a field or has a bad one (needs "
                    "subgraph, fingerprint, class, dtype, signature, kernel, "
                    "relative file, sha256, bytes, chips)",
                    path, set->example_count - 1);
      goto out_delete;
    }
    e->bytes = (size_t)bytes->valuedouble;
    size_t nc = (size_t)cJSON_GetArraySize(chips);
    e->chips = calloc(nc ? nc : 1, sizeof(char *));
    if (!e->chips) {
      s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
      goto out_delete;
    }
    const cJSON *chip;
    cJSON_ArrayForEach(chip, chips) {
      if (cJSON_IsString(chip) && chip->valuestring)
        e->chips[e->chip_count++] = strdup(chip->valuestring);
    }
  }
out_delete:
  cJSON_Delete(root);
  return s;
}

lf_status_t lf_prompt_default_dir(lf_strbuf_t *out) {
  return lf_llm_data_dir("LLM_FUSE_PROMPTS_DIR", "prompts", LF_PROMPTS_DIR,
                         out);
}

lf_status_t lf_prompt_set_load(const char *dir, lf_prompt_set_t **out_set) {
  *out_set = NULL;
  lf_strbuf_t dirbuf, digest, json, path;
  lf_strbuf_init(&dirbuf, 8192);
  lf_strbuf_init(&digest, (size_t)4 << 20);
  lf_strbuf_init(&json, EXAMPLES_JSON_CAP);
  lf_strbuf_init(&path, 8192);
  lf_status_t s = LF_OK;
  lf_prompt_set_t *set = calloc(1, sizeof(*set));
  if (!set) {
    s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out_free;
  }
  s = dir ? lf_strbuf_append_str(&dirbuf, dir) : lf_prompt_default_dir(&dirbuf);
  if (s)
    goto out_free;
  const char *d = lf_strbuf_cstr(&dirbuf);
  set->dir = strdup(d);
  s = set->dir ? lf_strbuf_append_str(&digest, "llm-fuse-prompts/1\n")
               : LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  if (!s)
    s = load_template(d, "system." LF_PROMPT_MAJOR ".txt", no_names, &digest,
                      &set->system);
  if (!s)
    s = load_template(d, "kernel." LF_PROMPT_MAJOR ".txt", kernel_names,
                      &digest, &set->kernel);
  if (!s)
    s = load_template(d, "repair." LF_PROMPT_MAJOR ".txt", repair_names,
                      &digest, &set->repair);
  if (!s)
    s = load_template(d, "refine." LF_PROMPT_MAJOR ".txt", refine_names,
                      &digest, &set->refine);
  if (!s)
    s = load_template(d, "adapt." LF_PROMPT_MAJOR ".txt", adapt_names, &digest,
                      &set->adapt);
  if (!s)
    s = load_template(d, "contract." LF_PROMPT_MAJOR ".md", no_names, &digest,
                      &set->contract);
  if (!s)
    s = load_template(d, "tma." LF_PROMPT_MAJOR ".md", no_names, &digest,
                      &set->tma);
  if (!s)
    s = lf_strbuf_appendf(&path, "%s/examples.json", d);
  if (!s) {
    s = lf_read_file(lf_strbuf_cstr(&path), &json);
    if (s)
      s = lf_status_annotate(s, "prompt examples %s", lf_strbuf_cstr(&path));
  }
  if (!s)
    s = lf_strbuf_appendf(&digest, "examples.json=%zu:", lf_strbuf_len(&json));
  if (!s)
    s = lf_strbuf_append(&digest, json.data, lf_strbuf_len(&json));
  if (!s)
    s = parse_examples(set, lf_strbuf_cstr(&path), lf_strbuf_cstr(&json),
                       lf_strbuf_len(&json));
  if (s)
    goto out_free;
  char hex[LF_SHA256_HEX_SIZE];
  s = lf_sha256_hex(digest.data, lf_strbuf_len(&digest), hex);
  if (s)
    goto out_free;
  snprintf(set->version, sizeof(set->version), "%s-%.12s", LF_PROMPT_MAJOR,
           hex);
  *out_set = set;
  set = NULL;
out_free:
  lf_prompt_set_destroy(set);
  lf_strbuf_free(&path);
  lf_strbuf_free(&json);
  lf_strbuf_free(&digest);
  lf_strbuf_free(&dirbuf);
  return s;
}

void lf_prompt_set_destroy(lf_prompt_set_t *set) {
  if (!set)
    return;
  free(set->dir);
  free(set->system), free(set->kernel), free(set->repair), free(set->refine);
  free(set->adapt), free(set->contract), free(set->tma);
  for (size_t i = 0; i < set->example_count; ++i)
    example_clear(&set->examples[i]);
  free(set->examples);
  free(set);
}

const char *lf_prompt_set_version(const lf_prompt_set_t *set) {
  return set->version;
}
const char *lf_prompt_set_major(const lf_prompt_set_t *set) {
  (void)set;
  return LF_PROMPT_MAJOR;
}
const char *lf_prompt_set_dir(const lf_prompt_set_t *set) { return set->dir; }

/* ---- Sanitizing ---------------------------------------------------------*/

/* A byte as it may appear in a prompt's fenced block. */
static char safe_char(unsigned char c) {
  if (c == '`')
    return '\'';
  if (c == '~')
    return '-';
  if (c == '\n' || c == '\t')
    return (char)c;
  if (c < 0x20 || c == 0x7f)
    return ' ';
  if (c >= 0x80)
    return '?';
  return (char)c;
}

static lf_status_t append_safe(lf_strbuf_t *out, const char *text, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    char c = safe_char((unsigned char)text[i]);
    LF_RETURN_IF_ERROR(lf_strbuf_append(out, &c, 1));
  }
  return LF_OK;
}

/* A string literal's contents that may stay: one short token of letters,
 * digits and _.$- (op names, iterator types, fingerprints), or a hex blob.
 * Anything with spaces or punctuation could carry prose: it goes. */
static bool keep_string(const char *s, size_t n) {
  if (n == 0)
    return true;
  if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    for (size_t i = 2; i < n; ++i)
      if (!isxdigit((unsigned char)s[i]))
        return false;
    return true;
  }
  if (n > 80)
    return false;
  for (size_t i = 0; i < n; ++i)
    if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' ||
          s[i] == '-' || s[i] == '$'))
      return false;
  return true;
}

/* Length of the string literal starting at s[0] == '"' (to the closing
 * quote, included), or `n` when unclosed. */
static size_t string_len(const char *s, size_t n) {
  size_t i = 1;
  while (i < n && s[i] != '"' && s[i] != '\n')
    i += s[i] == '\\' && i + 1 < n ? 2 : 1;
  return i < n && s[i] == '"' ? i + 1 : i;
}

/* Length of "loc(...)" at s (balanced parentheses, strings skipped), or 0
 * when s does not start one. */
static size_t loc_len(const char *s, size_t n) {
  if (n < 4 || memcmp(s, "loc(", 4) != 0)
    return 0;
  int depth = 0;
  for (size_t i = 3; i < n; ++i) {
    if (s[i] == '"') {
      i += string_len(s + i, n - i) - 1;
    } else if (s[i] == '(') {
      ++depth;
    } else if (s[i] == ')' && --depth == 0) {
      return i + 1;
    }
  }
  return n;
}

lf_status_t lf_prompt_sanitize_ir(const char *ir, size_t len,
                                  lf_strbuf_t *out) {
  lf_strbuf_t tmp;
  lf_strbuf_init(&tmp, len + 64 > LF_PROMPT_MAX_IR * 2 ? LF_PROMPT_MAX_IR * 2
                                                       : len + 64);
  lf_status_t s = LF_OK;
  size_t i = 0;
  bool line_start = true;
  while (i < len && !s && lf_strbuf_len(&tmp) < LF_PROMPT_MAX_IR) {
    const char *p = ir + i;
    size_t rest = len - i;
    if (line_start) {
      size_t sp = 0;
      while (sp < rest && (p[sp] == ' ' || p[sp] == '\t'))
        ++sp;
      if (rest - sp >= 4 && memcmp(p + sp, "#loc", 4) == 0) {
        const char *nl = memchr(p, '\n', rest);
        i = nl ? (size_t)(nl - ir) + 1 : len;
        continue;
      }
    }
    line_start = false;
    size_t l;
    if (*p == '/' && rest > 1 && p[1] == '/') {
      const char *nl = memchr(p, '\n', rest);
      i = nl ? (size_t)(nl - ir) : len;
      continue;
    }
    if (*p == '"') {
      l = string_len(p, rest);
      bool closed = l >= 2 && p[l - 1] == '"';
      if (closed && keep_string(p + 1, l - 2))
        s = append_safe(&tmp, p, l);
      else
        s = lf_strbuf_append_str(&tmp, "\"_\"");
      i += l;
      continue;
    }
    if ((l = loc_len(p, rest)) &&
        (i == 0 || !(isalnum((unsigned char)p[-1]) || p[-1] == '_' ||
                     p[-1] == '.' || p[-1] == '#'))) {
      /* Drop the space that separated it, if we wrote one. */
      if (lf_strbuf_len(&tmp) && tmp.data[lf_strbuf_len(&tmp) - 1] == ' ')
        lf_strbuf_truncate(&tmp, lf_strbuf_len(&tmp) - 1);
      i += l;
      continue;
    }
    if (*p == '\n')
      line_start = true;
    s = append_safe(&tmp, p, 1);
    ++i;
  }
  if (!s)
    s = lf_strbuf_append(out, tmp.data ? tmp.data : "", lf_strbuf_len(&tmp));
  if (!s && i < len)
    s = lf_strbuf_appendf(
        out, "\n... (%zu more bytes of the subgraph not shown)", len - i);
  lf_strbuf_free(&tmp);
  return s;
}

/* ---- Signatures ---------------------------------------------------------*/

/* Splits "a, b<c, d>, e" at top-level commas into `out` lines prefixed with
 * `prefix`. */
static lf_status_t split_list(const char *text, size_t n, const char *prefix,
                              lf_strbuf_t *out, size_t *count) {
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= n; ++i) {
    char c = i < n ? text[i] : ',';
    if (c == '<' || c == '(' || c == '[' || c == '{')
      ++depth;
    else if (c == '>' || c == ')' || c == ']' || c == '}')
      --depth;
    if (depth < 0)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "unbalanced brackets");
    if (c == ',' && depth == 0) {
      size_t a = start, b = i;
      while (a < b && isspace((unsigned char)text[a]))
        ++a;
      while (b > a && isspace((unsigned char)text[b - 1]))
        --b;
      if (a == b) {
        if (i == n && *count == 0 && start == 0)
          return LF_OK; /* "()" */
        return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "empty type");
      }
      LF_RETURN_IF_ERROR(
          lf_strbuf_appendf(out, "%s%.*s\n", prefix, (int)(b - a), text + a));
      ++*count;
      start = i + 1;
    }
  }
  return depth == 0
             ? LF_OK
             : LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "unbalanced brackets");
}

lf_status_t lf_prompt_split_signature(const char *sig, lf_strbuf_t *out) {
  if (!sig)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "no signature");
  const char *p = sig;
  while (isspace((unsigned char)*p))
    ++p;
  if (*p != '(')
    goto bad;
  int depth = 0;
  const char *close = NULL;
  for (const char *q = p; *q; ++q) {
    if (*q == '(' || *q == '<')
      ++depth;
    else if ((*q == ')' || *q == '>') && --depth == 0 && *q == ')') {
      close = q;
      break;
    }
  }
  if (!close)
    goto bad;
  const char *arrow = close + 1;
  while (isspace((unsigned char)*arrow))
    ++arrow;
  if (strncmp(arrow, "->", 2) != 0)
    goto bad;
  const char *res = arrow + 2;
  while (isspace((unsigned char)*res))
    ++res;
  size_t rn = strlen(res);
  while (rn && isspace((unsigned char)res[rn - 1]))
    --rn;
  if (rn >= 2 && res[0] == '(' && res[rn - 1] == ')')
    ++res, rn -= 2;
  size_t ins = 0, outs = 0;
  lf_status_t s = split_list(p + 1, (size_t)(close - p - 1), "in ", out, &ins);
  if (!s)
    s = split_list(res, rn, "out ", out, &outs);
  if (!s && outs == 0)
    s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "no results");
  if (s)
    return lf_status_annotate(s, "signature '%.200s'", sig);
  return LF_OK;
bad:
  return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                   "signature '%.200s' is not '(types) -> type(s)'", sig);
}

/* The element type of a "tensor<AxBxT>" (or the type itself when scalar),
 * copied to `out`. Also the shape ("AxB", or "scalar") into `shape`. */
static void type_parts(const char *type, char *dtype, size_t dsize, char *shape,
                       size_t ssize) {
  size_t n = strlen(type);
  if (strncmp(type, "tensor<", 7) == 0 && n > 8 && type[n - 1] == '>') {
    const char *inner = type + 7;
    size_t in = n - 8;
    const char *x = NULL;
    for (size_t i = 0; i < in; ++i)
      if (inner[i] == 'x' && i > 0 && isdigit((unsigned char)inner[i - 1]))
        x = inner + i;
    if (x) {
      snprintf(shape, ssize, "%.*s", (int)(x - inner), inner);
      snprintf(dtype, dsize, "%.*s", (int)(inner + in - x - 1), x + 1);
    } else {
      snprintf(shape, ssize, "rank 0");
      snprintf(dtype, dsize, "%.*s", (int)in, inner);
    }
    return;
  }
  snprintf(shape, ssize, "scalar");
  snprintf(dtype, dsize, "%s", type);
}

/* The kernel-side type of a subgraph operand type. */
static lf_status_t kernel_type(const char *type, lf_strbuf_t *out) {
  if (strncmp(type, "tensor<", 7) == 0)
    return lf_strbuf_appendf(out, "memref<%s", type + 7);
  return lf_strbuf_append_str(out, type);
}

/* The dtype that picks examples: the first result's element type. */
static void subject_dtype(const char *lines, char *dtype, size_t size) {
  dtype[0] = '\0';
  const char *o = strstr(lines, "out ");
  if (!o)
    return;
  const char *nl = strchr(o, '\n');
  char type[512], shape[256];
  snprintf(type, sizeof(type), "%.*s",
           (int)(nl ? (size_t)(nl - o - 4) : strlen(o + 4)), o + 4);
  type_parts(type, dtype, size, shape, sizeof(shape));
}

/* Renders {{operands}} and {{kernel_args}}. */
static lf_status_t describe_operands(const lf_prompt_subject_t *subj,
                                     const char *lines, lf_strbuf_t *operands,
                                     lf_strbuf_t *args) {
  LF_RETURN_IF_ERROR(lf_strbuf_appendf(args, "gpu.func @%s(", subj->name));
  int in = 0, out = 0;
  bool first = true;
  for (const char *l = lines; *l;) {
    const char *nl = strchr(l, '\n');
    size_t n = nl ? (size_t)(nl - l) : strlen(l);
    bool is_out = strncmp(l, "out ", 4) == 0;
    size_t skip = is_out ? 4 : 3;
    char type[1024], dtype[256], shape[512];
    snprintf(type, sizeof(type), "%.*s", (int)(n - skip), l + skip);
    type_parts(type, dtype, sizeof(dtype), shape, sizeof(shape));
    int index = is_out ? out++ : in++;
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(
        operands, "- %s %d: `%s` (shape %s, dtype %s)%s\n",
        is_out ? "result" : "input", index, type, shape, dtype,
        is_out ? ", written by the kernel" : ", read-only"));
    LF_RETURN_IF_ERROR(lf_strbuf_appendf(args, "%s%%%s%d: ", first ? "" : ", ",
                                         is_out ? "out" : "in", index));
    LF_RETURN_IF_ERROR(kernel_type(type, args));
    first = false;
    l = nl ? nl + 1 : l + n;
  }
  if (operands->len && operands->data[operands->len - 1] == '\n')
    lf_strbuf_truncate(operands, operands->len - 1);
  return lf_strbuf_append_str(
      args, ") kernel\n    attributes {known_block_size = array<i32: BX, BY, "
            "BZ>,\n                known_grid_size = array<i32: GX, GY, GZ>}");
}

/* ---- Examples -----------------------------------------------------------*/

static int arch_number(const char *arch) {
  return arch && strncmp(arch, "sm_", 3) == 0 ? atoi(arch + 3) : 0;
}
static bool arch_suffixed(const char *arch) {
  size_t n = arch ? strlen(arch) : 0;
  return n && isalpha((unsigned char)arch[n - 1]);
}

/* A kernel for `archs` runs on `arch` when one of them is `arch`, or an
 * unsuffixed one no newer than it. */
static bool archs_fit(const char *const *archs, size_t n, const char *arch) {
  for (size_t i = 0; i < n; ++i) {
    if (strcmp(archs[i], arch) == 0)
      return true;
    if (!arch_suffixed(archs[i]) && arch_number(archs[i]) <= arch_number(arch))
      return true;
  }
  return false;
}

static bool example_fits(const example_t *e, const char *arch) {
  return archs_fit((const char *const *)e->chips, e->chip_count, arch);
}

/* 0: same class; 1: a related one; -1: not an example for this class. */
static int class_rank(const char *want, const char *have) {
  if (strcmp(want, have) == 0)
    return 0;
  static const char *const related[][2] = {{"softmax", "reduction"},
                                           {"attention-like", "reduction"},
                                           {"elementwise", "reduction"},
                                           {"reduction", "softmax"},
                                           {"attention-like", "softmax"}};
  for (size_t i = 0; i < sizeof(related) / sizeof(related[0]); ++i)
    if (strcmp(want, related[i][0]) == 0 && strcmp(have, related[i][1]) == 0)
      return 1;
  return -1;
}

/* A table entry that may be an example, and, once chosen, its template. */
typedef struct pick_s {
  int tier;   /* 0: the subject's pattern; 1: same class and element type;
                 2: same class */
  char *name; /* the entry's file name: the tie-break */
  char *path; /* the entry's file: its identity */
  char pattern[65];
  char id[96];
  char klass[32];
  char dtype[32];
  char source[256];
  int64_t fixed[LF_TABLE_MAX_SIZES];
  size_t num_sizes;
  char *text; /* the template (chosen picks only) */
} pick_t;

typedef struct selection_s {
  pick_t picks[LF_PROMPT_MAX_EXAMPLES]; /* from the table, shown first */
  size_t num_picks;
  size_t seeds[LF_PROMPT_MAX_EXAMPLES]; /* indices into set->examples */
  size_t num_seeds;
} selection_t;

static void pick_clear(pick_t *p) {
  free(p->name), free(p->path), free(p->text);
  p->name = p->path = p->text = NULL;
}

static void selection_clear(selection_t *sel) {
  for (size_t i = 0; i < sel->num_picks; ++i)
    pick_clear(&sel->picks[i]);
  sel->num_picks = sel->num_seeds = 0;
}

/* The element type of a template: that of the last memref parameter of its
 * first gpu.func (the contract lists the results last), e.g. "bf16" for
 * `%y: memref<{{S0}}x4096xbf16>`; "" when there is none. */
static void template_dtype(const char *text, char *dtype, size_t size) {
  dtype[0] = '\0';
  const char *f = text ? strstr(text, "gpu.func @") : NULL;
  const char *open = f ? strchr(f, '(') : NULL;
  if (!open)
    return;
  int depth = 0;
  const char *param = open + 1, *close = NULL;
  for (const char *p = open; *p && !close; ++p) {
    if (*p == '(' || *p == '<' || *p == '[' || *p == '{')
      ++depth;
    else if (*p == ')' || *p == '>' || *p == ']' || *p == '}')
      close = --depth == 0 ? p : NULL;
    else if (*p == ',' && depth == 1)
      param = p + 1;
  }
  if (!close)
    return;
  const char *m = NULL;
  for (const char *q = param; q && q < close; q = strstr(q + 1, "memref<"))
    if (strncmp(q, "memref<", 7) == 0 && q < close)
      m = q + 7;
  if (!m || m >= close)
    return;
  /* The element type follows the last 'x' after a dimension, at depth 0 of
   * the memref (placeholders and layouts nest). */
  const char *start = m, *end = NULL;
  depth = 0;
  for (const char *p = m; p < close && !end; ++p) {
    if (*p == '<' || *p == '{' || *p == '(' || *p == '[')
      ++depth;
    else if (*p == '>' || *p == '}' || *p == ')' || *p == ']')
      end = depth-- == 0 ? p : NULL;
    else if (*p == ',' && depth == 0)
      end = p;
    else if (*p == 'x' && depth == 0 && p > m &&
             (isdigit((unsigned char)p[-1]) || p[-1] == '}' || p[-1] == '?'))
      start = p + 1;
  }
  if (!end || end <= start)
    return;
  size_t n = (size_t)(end - start);
  while (n && isspace((unsigned char)start[n - 1]))
    --n;
  if (n == 0 || n >= size)
    return;
  memcpy(dtype, start, n);
  dtype[n] = '\0';
}

typedef struct gather_s {
  const lf_prompt_subject_t *subj;
  const char *dtype; /* the subject's */
  pick_t *all;
  size_t count, cap;
  bool oom;
} gather_t;

/* Collects every entry that may be an example of the subject, with its
 * tier. */
static bool gather_one(const lf_table_info_t *in, void *user) {
  gather_t *g = user;
  const lf_prompt_subject_t *subj = g->subj;
  if (!archs_fit(in->archs, in->num_archs, subj->arch))
    return true;
  char dtype[32];
  template_dtype(in->template_text, dtype, sizeof(dtype));
  int tier = -1;
  if (subj->pattern && strcmp(in->pattern, subj->pattern) == 0)
    tier = 0;
  else if (strcmp(in->klass, subj->klass) == 0)
    tier = g->dtype[0] && strcmp(dtype, g->dtype) == 0 ? 1 : 2;
  if (tier < 0)
    return true;
  if (g->count == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 32;
    pick_t *n = realloc(g->all, cap * sizeof(*n));
    if (!n) {
      g->oom = true;
      return false;
    }
    g->all = n, g->cap = cap;
  }
  pick_t *p = &g->all[g->count];
  memset(p, 0, sizeof(*p));
  const char *slash = strrchr(in->path, '/');
  p->tier = tier;
  p->name = strdup(slash ? slash + 1 : in->path);
  p->path = strdup(in->path);
  if (!p->name || !p->path) {
    pick_clear(p);
    g->oom = true;
    return false;
  }
  snprintf(p->pattern, sizeof(p->pattern), "%s", in->pattern);
  snprintf(p->id, sizeof(p->id), "%s", in->id);
  snprintf(p->klass, sizeof(p->klass), "%s", in->klass);
  snprintf(p->dtype, sizeof(p->dtype), "%s", dtype);
  snprintf(p->source, sizeof(p->source), "%s", in->source ? in->source : "");
  p->num_sizes =
      in->num_sizes < LF_TABLE_MAX_SIZES ? in->num_sizes : LF_TABLE_MAX_SIZES;
  for (size_t i = 0; i < p->num_sizes; ++i)
    p->fixed[i] = in->fixed[i];
  ++g->count;
  return true;
}

static int compare_picks(const void *a, const void *b) {
  const pick_t *x = a, *y = b;
  if (x->tier != y->tier)
    return x->tier < y->tier ? -1 : 1;
  int c = strcmp(x->name, y->name);
  if (!c)
    c = strcmp(x->pattern, y->pattern);
  return c ? c : strcmp(x->path, y->path);
}

typedef struct fetch_s {
  selection_t *sel;
  bool oom;
} fetch_t;

/* Copies the chosen entries' templates. */
static bool fetch_one(const lf_table_info_t *in, void *user) {
  fetch_t *f = user;
  for (size_t i = 0; i < f->sel->num_picks; ++i) {
    pick_t *p = &f->sel->picks[i];
    if (!p->text && strcmp(p->path, in->path) == 0 && in->template_text &&
        !(p->text = strdup(in->template_text)))
      f->oom = true;
  }
  return !f->oom;
}

/* Picks up to LF_PROMPT_MAX_EXAMPLES table entries for `subj`: its pattern
 * first, then same class and element type, then same class; by file name,
 * pattern key, path within a tier; one per pattern key. */
static lf_status_t choose_table(const lf_table_t *table,
                                const lf_prompt_subject_t *subj,
                                const char *dtype, selection_t *sel) {
  if (!table)
    return LF_OK;
  gather_t g = {.subj = subj, .dtype = dtype};
  lf_table_foreach(table, gather_one, &g);
  lf_status_t s = LF_OK;
  if (g.oom)
    s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  if (!s && g.count)
    qsort(g.all, g.count, sizeof(*g.all), compare_picks);
  for (size_t i = 0; !s && i < g.count; ++i) {
    if (sel->num_picks >= LF_PROMPT_MAX_EXAMPLES)
      break;
    bool taken = false;
    for (size_t k = 0; k < sel->num_picks; ++k)
      taken = taken || strcmp(sel->picks[k].pattern, g.all[i].pattern) == 0;
    if (taken)
      continue;
    sel->picks[sel->num_picks++] = g.all[i]; /* takes name and path */
    g.all[i].name = g.all[i].path = NULL;
  }
  for (size_t i = 0; i < g.count; ++i)
    pick_clear(&g.all[i]);
  free(g.all);
  if (!s && sel->num_picks) {
    fetch_t f = {.sel = sel};
    lf_table_foreach(table, fetch_one, &f);
    if (f.oom)
      s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  return s;
}

/* Picks examples.json examples for `subj` into the slots the table left:
 * same class before related, same dtype before others, smaller first;
 * never the subject's own subgraph, never two for one subgraph, never one
 * that a chosen table entry's source names (the same kernel). */
static void choose_seeds(const lf_prompt_set_t *set,
                         const lf_prompt_subject_t *subj, const char *dtype,
                         selection_t *sel) {
  while (sel->num_picks + sel->num_seeds < LF_PROMPT_MAX_EXAMPLES) {
    long best = -1;
    long best_score = 0;
    for (size_t i = 0; i < set->example_count; ++i) {
      const example_t *e = &set->examples[i];
      int rank = class_rank(subj->klass, e->klass);
      if (rank < 0 || strcmp(e->fingerprint, subj->fingerprint) == 0 ||
          e->bytes > LF_PROMPT_MAX_EXAMPLE || !example_fits(e, subj->arch))
        continue;
      bool taken = false;
      for (size_t k = 0; k < sel->num_seeds; ++k)
        if (strcmp(set->examples[sel->seeds[k]].fingerprint, e->fingerprint) ==
            0)
          taken = true;
      for (size_t k = 0; k < sel->num_picks; ++k)
        if (strstr(sel->picks[k].source, e->subgraph))
          taken = true;
      if (taken)
        continue;
      long score = (long)rank * 4000000L +
                   (strcmp(e->dtype, dtype) == 0 ? 0 : 2000000L) +
                   (long)e->bytes;
      if (best < 0 || score < best_score)
        best = (long)i, best_score = score;
    }
    if (best < 0)
      break;
    sel->seeds[sel->num_seeds++] = (size_t)best;
  }
}

static lf_status_t select_examples(const lf_prompt_set_t *set,
                                   const lf_table_t *table,
                                   const lf_prompt_subject_t *subj,
                                   const char *dtype, selection_t *sel) {
  memset(sel, 0, sizeof(*sel));
  lf_status_t s = choose_table(table, subj, dtype, sel);
  if (s) {
    selection_clear(sel);
    return s;
  }
  choose_seeds(set, subj, dtype, sel);
  return LF_OK;
}

/* `in` as one prompt-safe line of at most size - 1 bytes. */
static void safe_line(const char *in, char *out, size_t size) {
  size_t i = 0;
  for (; in && in[i] && i + 1 < size; ++i) {
    char c = safe_char((unsigned char)in[i]);
    out[i] = c == '\n' || c == '\t' ? ' ' : c;
  }
  out[i] = '\0';
}

/* Appends "S0 = 1024, S1 = 4096" for `n` sizes (negative: "free"). */
static lf_status_t append_sizes(lf_strbuf_t *out, const int64_t *v, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (v[i] < 0)
      LF_RETURN_IF_ERROR(
          lf_strbuf_appendf(out, "%sS%zu free", i ? ", " : "", i));
    else
      LF_RETURN_IF_ERROR(lf_strbuf_appendf(out, "%sS%zu = %lld", i ? ", " : "",
                                           i, (long long)v[i]));
  }
  return LF_OK;
}

/* The kernel text a table pick shows, into `text`, and the line that says
 * what it is, into `note`: instantiated when every size is known (fixed in
 * the entry, or the subject's when the entry is of its pattern and its
 * fixed sizes are the subject's) and admitted by its requirements, else
 * the template. */
static lf_status_t pick_text(const pick_t *p, const lf_prompt_subject_t *subj,
                             lf_strbuf_t *text, lf_strbuf_t *note) {
  int64_t v[LF_TABLE_MAX_SIZES];
  bool known = true;
  bool subject_sizes = p->tier == 0 && subj->pattern_sizes &&
                       subj->num_pattern_sizes == p->num_sizes;
  bool admits = subject_sizes;
  for (size_t i = 0; admits && i < p->num_sizes; ++i)
    admits = p->fixed[i] < 0 || p->fixed[i] == subj->pattern_sizes[i];
  for (size_t i = 0; i < p->num_sizes; ++i) {
    v[i] = p->fixed[i] >= 0 ? p->fixed[i]
           : admits         ? subj->pattern_sizes[i]
                            : -1;
    known = known && v[i] >= 1;
  }
  if (known) {
    lf_strbuf_t bound;
    lf_strbuf_init(&bound, LF_TABLE_MAX_ENTRY_BYTES + 65536);
    lf_tune_set_t *ts = NULL;
    lf_status_t r = lf_table_bind_sizes(p->text, v, p->num_sizes, &bound);
    if (!r)
      r = lf_tune_expand(bound.data ? bound.data : "", bound.len, &ts);
    lf_strbuf_free(&bound);
    if (!r && ts->count >= 1) {
      lf_status_t s = lf_strbuf_append_str(text, ts->variants[0].text);
      if (!s)
        s = lf_strbuf_append_str(note, "Instantiated for ");
      if (!s)
        s = append_sizes(note, v, p->num_sizes);
      if (!s && p->num_sizes == 0)
        s = lf_strbuf_append_str(note, "its sizes");
      if (!s && admits)
        s = lf_strbuf_append_str(note, ", this subgraph's sizes");
      if (!s && ts->count > 1)
        s = lf_strbuf_appendf(note, " (the first of its tune variants, %s)",
                              ts->variants[0].label);
      if (!s)
        s = lf_strbuf_append_str(note, ".");
      lf_tune_set_destroy(ts);
      return s;
    }
    lf_tune_set_destroy(ts);
    lf_status_free(r); /* refused: shown as the template */
  }
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(text, p->text));
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(
      note, "A template: `{{S0}}`-style placeholders are template sizes, "
            "declared free by `// llm-fuse.template-size SK` lines ("));
  int64_t fx[LF_TABLE_MAX_SIZES];
  for (size_t i = 0; i < p->num_sizes; ++i)
    fx[i] = p->fixed[i];
  LF_RETURN_IF_ERROR(append_sizes(note, fx, p->num_sizes));
  LF_RETURN_IF_ERROR(lf_strbuf_append_str(note, ")."));
  if (subject_sizes) {
    LF_RETURN_IF_ERROR(lf_strbuf_append_str(note, " This subgraph binds "));
    LF_RETURN_IF_ERROR(
        append_sizes(note, subj->pattern_sizes, subj->num_pattern_sizes));
    LF_RETURN_IF_ERROR(lf_strbuf_append_str(note, "."));
  }
  return LF_OK;
}

/* Appends `text` made prompt-safe, cut at a line end so that it stays
 * within LF_PROMPT_MAX_EXAMPLE bytes with a last line saying how many
 * lines were cut. */
static lf_status_t append_capped(lf_strbuf_t *out, const char *text,
                                 size_t len) {
  if (len <= LF_PROMPT_MAX_EXAMPLE)
    return append_safe(out, text, len);
  size_t cut = LF_PROMPT_MAX_EXAMPLE - 128;
  while (cut > 0 && text[cut - 1] != '\n')
    --cut;
  size_t lines = 0;
  for (size_t i = cut; i < len; ++i)
    lines += text[i] == '\n';
  if (len > cut && text[len - 1] != '\n')
    ++lines;
  LF_RETURN_IF_ERROR(append_safe(out, text, cut));
  return lf_strbuf_appendf(
      out, "// ... (%zu more lines of this kernel not shown here)\n", lines);
}

static const char *tier_words(int tier) {
  return tier == 0   ? "the same pattern as this subgraph: the same math"
         : tier == 1 ? "the same class and element type"
                     : "the same class";
}

static lf_status_t render_pick(const pick_t *p, const lf_prompt_subject_t *subj,
                               size_t number, lf_strbuf_t *out) {
  lf_strbuf_t text, note;
  lf_strbuf_init(&text, LF_TABLE_MAX_ENTRY_BYTES + 65536);
  lf_strbuf_init(&note, 4096);
  char id[sizeof(p->id)], klass[sizeof(p->klass)], dtype[sizeof(p->dtype)];
  safe_line(p->id, id, sizeof(id));
  safe_line(p->klass, klass, sizeof(klass));
  safe_line(p->dtype[0] ? p->dtype : "element type unknown", dtype,
            sizeof(dtype));
  lf_status_t s = pick_text(p, subj, &text, &note);
  if (!s)
    s = lf_strbuf_appendf(out,
                          "%s### Example %zu: pattern table entry %s (%s, %s; "
                          "%s)\n\n%s\n\n```mlir\n",
                          number > 1 ? "\n" : "", number, id, klass, dtype,
                          tier_words(p->tier), lf_strbuf_cstr(&note));
  if (!s)
    s = append_capped(out, text.data ? text.data : "", text.len);
  if (!s && (!text.len || text.data[text.len - 1] != '\n'))
    s = lf_strbuf_append_str(out, "\n");
  if (!s)
    s = lf_strbuf_append_str(out, "```\n");
  lf_strbuf_free(&note);
  lf_strbuf_free(&text);
  return s;
}

static lf_status_t render_examples(const lf_prompt_set_t *set,
                                   const lf_table_t *table,
                                   const lf_prompt_subject_t *subj,
                                   const char *dtype, lf_strbuf_t *out) {
  selection_t sel;
  LF_RETURN_IF_ERROR(select_examples(set, table, subj, dtype, &sel));
  size_t shown = 0;
  lf_strbuf_t path, text;
  lf_strbuf_init(&path, 8192);
  lf_strbuf_init(&text, LF_PROMPT_MAX_EXAMPLE + 1);
  lf_status_t s = LF_OK;
  for (size_t k = 0; k < sel.num_picks && !s; ++k)
    if (sel.picks[k].text)
      s = render_pick(&sel.picks[k], subj, ++shown, out);
  for (size_t k = 0; k < sel.num_seeds && !s; ++k) {
    const example_t *e = &set->examples[sel.seeds[k]];
    lf_strbuf_reset(&path);
    lf_strbuf_reset(&text);
    s = lf_strbuf_appendf(&path, "%s/%s", set->dir, e->file);
    if (s)
      break;
    lf_status_t r = lf_read_file(lf_strbuf_cstr(&path), &text);
    char hex[LF_SHA256_HEX_SIZE] = "";
    if (!r)
      r = lf_sha256_hex(text.data ? text.data : "", lf_strbuf_len(&text), hex);
    if (!r && strcmp(hex, e->sha256) != 0)
      r = LF_STATUS(LF_STATUS_DATA_LOSS,
                    "%s changed since examples.json was generated (rerun "
                    "kernels/replay/gen_replay.py)",
                    lf_strbuf_cstr(&path));
    if (r) { /* a broken example costs the prompt an example, not the run */
      lf_log_status(LF_LOG_WARN, "prompt: example skipped", r);
      continue;
    }
    ++shown;
    s = lf_strbuf_appendf(out, "%s### Example %zu: %s (%s, %s)\n\n",
                          shown > 1 ? "\n" : "", shown, e->kernel, e->klass,
                          e->dtype);
    if (!s)
      s = lf_strbuf_appendf(out, "Subgraph function type: `%s`\n\n```mlir\n",
                            e->signature);
    if (!s)
      s = append_safe(out, text.data ? text.data : "", lf_strbuf_len(&text));
    if (!s && (!text.len || text.data[text.len - 1] != '\n'))
      s = lf_strbuf_append_str(out, "\n");
    if (!s)
      s = lf_strbuf_append_str(out, "```\n");
  }
  if (!s && shown == 0)
    s = lf_strbuf_appendf(out,
                          "(No hand-written kernel of class %s is "
                          "available; follow the contract.)\n",
                          subj->klass);
  lf_strbuf_free(&text);
  lf_strbuf_free(&path);
  selection_clear(&sel);
  return s;
}

lf_status_t lf_prompt_examples_chosen(const lf_prompt_set_t *set,
                                      const lf_table_t *table,
                                      const lf_prompt_subject_t *subj,
                                      lf_strbuf_t *out) {
  lf_strbuf_t lines;
  lf_strbuf_init(&lines, 65536);
  lf_status_t s = lf_prompt_split_signature(subj->signature, &lines);
  char dtype[128] = "";
  if (!s)
    subject_dtype(lf_strbuf_cstr(&lines), dtype, sizeof(dtype));
  selection_t sel;
  if (!s)
    s = select_examples(set, table, subj, dtype, &sel);
  lf_strbuf_free(&lines);
  if (s)
    return s;
  size_t n = 0;
  for (size_t k = 0; k < sel.num_picks && !s; ++k)
    s = lf_strbuf_appendf(out, "%stable:%s", n++ ? "," : "", sel.picks[k].id);
  for (size_t k = 0; k < sel.num_seeds && !s; ++k)
    s = lf_strbuf_appendf(out, "%s%s", n++ ? "," : "",
                          set->examples[sel.seeds[k]].subgraph);
  selection_clear(&sel);
  return s;
}

/* ---- Filling ------------------------------------------------------------*/

typedef struct slot_s {
  const char *name;
  const char *value;
} slot_t;

/* The slots a first request and an adapt request share: the subject
 * subgraph (parts_t p) and the contract of the prompt set. */
#define SUBJECT_SLOTS(p, set)                                                  \
  {"gpu", (p).gpu}, {"arch", (p).arch}, {"class", (p).klass},                  \
      {"name", (p).name}, {"signature", (p).sig},                              \
      {"operands", lf_strbuf_cstr(&(p).operands)},                             \
      {"kernel_args", lf_strbuf_cstr(&(p).args)},                              \
      {"subgraph", lf_strbuf_cstr(&(p).ir)}, {"contract", (set)->contract}

static lf_status_t fill(const char *body, const slot_t *slots, size_t n,
                        lf_strbuf_t *out) {
  const char *p = body;
  for (const char *ph = strstr(p, "{{"); ph; ph = strstr(p, "{{")) {
    const char *end = strstr(ph + 2, "}}");
    if (!end)
      break;
    LF_RETURN_IF_ERROR(lf_strbuf_append(out, p, (size_t)(ph - p)));
    size_t len = (size_t)(end - ph - 2);
    const char *value = "";
    for (size_t i = 0; i < n; ++i)
      if (strlen(slots[i].name) == len &&
          memcmp(slots[i].name, ph + 2, len) == 0)
        value = slots[i].value;
    LF_RETURN_IF_ERROR(lf_strbuf_append_str(out, value));
    p = end + 2;
  }
  return lf_strbuf_append_str(out, p);
}

static const char *gpu_of(const lf_prompt_subject_t *subj) {
  if (subj->gpu && subj->gpu[0])
    return subj->gpu;
  int n = arch_number(subj->arch);
  if (n >= 90 && n < 100)
    return "NVIDIA H100/H200 (Hopper)";
  if (n >= 80 && n < 90)
    return "NVIDIA A100 (Ampere)";
  return "an NVIDIA GPU";
}

static lf_status_t check_subject(const lf_prompt_subject_t *subj) {
  if (!subj || !subj->name || !subj->fingerprint || !subj->klass || !subj->ir ||
      !subj->signature || !subj->arch)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "a prompt needs the subgraph's name, fingerprint, class, "
                     "IR, signature and arch");
  return LF_OK;
}

lf_status_t lf_prompt_system(const lf_prompt_set_t *set, lf_strbuf_t *out) {
  return lf_strbuf_append_str(out, set->system);
}

/* What every first request says about its subject, made prompt-safe. */
typedef struct parts_s {
  lf_strbuf_t lines, operands, args, ir;
  char dtype[128];
  char klass[128], name[160], arch[32], sig[4096], gpu[256];
} parts_t;

static void parts_free(parts_t *p) {
  lf_strbuf_free(&p->ir);
  lf_strbuf_free(&p->args);
  lf_strbuf_free(&p->operands);
  lf_strbuf_free(&p->lines);
}

/* Fills `p` for `subj` (parts_free() it either way). */
static lf_status_t parts_make(const lf_prompt_subject_t *subj, parts_t *p) {
  lf_strbuf_init(&p->lines, 65536);
  lf_strbuf_init(&p->operands, 65536);
  lf_strbuf_init(&p->args, 65536);
  lf_strbuf_init(&p->ir, LF_PROMPT_MAX_IR + 256);
  p->dtype[0] = '\0';
  lf_status_t s = lf_prompt_split_signature(subj->signature, &p->lines);
  if (!s) {
    subject_dtype(lf_strbuf_cstr(&p->lines), p->dtype, sizeof(p->dtype));
    s = describe_operands(subj, lf_strbuf_cstr(&p->lines), &p->operands,
                          &p->args);
  }
  if (!s)
    s = lf_prompt_sanitize_ir(subj->ir, strlen(subj->ir), &p->ir);
  /* Short fields go through the same filter: no fences, no control chars. */
  safe_line(subj->klass, p->klass, sizeof(p->klass));
  safe_line(subj->name, p->name, sizeof(p->name));
  safe_line(subj->arch, p->arch, sizeof(p->arch));
  safe_line(subj->signature, p->sig, sizeof(p->sig));
  safe_line(gpu_of(subj), p->gpu, sizeof(p->gpu));
  return s;
}

lf_status_t lf_prompt_first(const lf_prompt_set_t *set, const lf_table_t *table,
                            const lf_prompt_subject_t *subj, lf_strbuf_t *out) {
  LF_RETURN_IF_ERROR(check_subject(subj));
  parts_t p;
  lf_strbuf_t examples;
  lf_strbuf_init(&examples,
                 LF_PROMPT_MAX_EXAMPLES * LF_PROMPT_MAX_EXAMPLE + 8192);
  lf_status_t s = parts_make(subj, &p);
  if (!s)
    s = render_examples(set, table, subj, p.dtype, &examples);
  if (!s) {
    /* Tensor maps (TMA) exist from sm_90 on. */
    const slot_t slots[] = {
        SUBJECT_SLOTS(p, set),
        {"examples", lf_strbuf_cstr(&examples)},
        {"tma", arch_number(subj->arch) >= 90 ? set->tma : ""},
    };
    s = fill(set->kernel, slots, sizeof(slots) / sizeof(slots[0]), out);
  }
  lf_strbuf_free(&examples);
  parts_free(&p);
  return s;
}

/* `error` cut to LF_PROMPT_MAX_ERROR bytes (never inside a UTF-8
 * sequence), made prompt-safe, trailing newlines dropped. */
static lf_status_t clean_error(const char *error, lf_strbuf_t *err) {
  const char *e = error && error[0] ? error : "(no error text)";
  size_t n = strlen(e);
  if (n > LF_PROMPT_MAX_ERROR)
    n = LF_PROMPT_MAX_ERROR;
  /* Do not cut a UTF-8 sequence in half. */
  while (n > 0 && n < strlen(e) && ((unsigned char)e[n] & 0xC0) == 0x80)
    --n;
  lf_status_t s = append_safe(err, e, n);
  while (!s && err->len && err->data[err->len - 1] == '\n')
    lf_strbuf_truncate(err, err->len - 1);
  return s;
}

/* The subject's name, prompt-safe, into `name`. */
static void safe_name(const lf_prompt_subject_t *subj, char *name,
                      size_t size) {
  size_t i = 0;
  for (; subj->name[i] && i + 1 < size; ++i) {
    char c = safe_char((unsigned char)subj->name[i]);
    name[i] = c == '\n' || c == '\t' ? ' ' : c;
  }
  name[i] = '\0';
}

lf_status_t lf_prompt_repair(const lf_prompt_set_t *set,
                             const lf_prompt_subject_t *subj, int attempt,
                             int max_attempts, const char *error,
                             lf_strbuf_t *out) {
  LF_RETURN_IF_ERROR(check_subject(subj));
  lf_strbuf_t err;
  lf_strbuf_init(&err, LF_PROMPT_MAX_ERROR + 64);
  lf_status_t s = clean_error(error, &err);
  char a[16], m[16], name[160];
  snprintf(a, sizeof(a), "%d", attempt);
  snprintf(m, sizeof(m), "%d", max_attempts);
  safe_name(subj, name, sizeof(name));
  if (!s) {
    const slot_t slots[] = {{"attempt", a},
                            {"max_attempts", m},
                            {"error", lf_strbuf_cstr(&err)},
                            {"name", name}};
    s = fill(set->repair, slots, sizeof(slots) / sizeof(slots[0]), out);
  }
  lf_strbuf_free(&err);
  return s;
}

lf_status_t lf_prompt_refine(const lf_prompt_set_t *set,
                             const lf_prompt_subject_t *subj,
                             const lf_prompt_refine_t *r, lf_strbuf_t *out) {
  LF_RETURN_IF_ERROR(check_subject(subj));
  if (!r || r->round < 1 || r->max_rounds < r->round || !(r->best_ms > 0))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "a refinement needs a round within max_rounds and the "
                     "best verified time");
  lf_strbuf_t status, err;
  lf_strbuf_init(&status, LF_PROMPT_MAX_ERROR + 1024);
  lf_strbuf_init(&err, LF_PROMPT_MAX_ERROR + 64);
  lf_status_t s = LF_OK;
  if (r->error && r->error[0]) {
    s = clean_error(r->error, &err);
    if (!s)
      s = lf_strbuf_appendf(
          &status,
          "The kernel in your previous reply was not kept; it was rejected "
          "with this error (line numbers count lines of your previous "
          "reply):\n\n```text\n%s\n```\n\nThe fastest verified kernel so "
          "far stays in place.",
          lf_strbuf_cstr(&err));
  } else if (r->last_ms > 0) {
    s = lf_strbuf_appendf(&status,
                          "The kernel in your previous reply passed "
                          "verification and ran in %.4g ms%s.",
                          r->last_ms,
                          r->last_ms > r->best_ms
                              ? ", slower than the fastest so far, which stays"
                              : "");
  }
  char rd[16], mr[16], best[32], fb[32], roof[32], frac[32], name[160];
  snprintf(rd, sizeof(rd), "%d", r->round);
  snprintf(mr, sizeof(mr), "%d", r->max_rounds);
  snprintf(best, sizeof(best), "%.4g", r->best_ms);
  if (r->fallback_ms > 0)
    snprintf(fb, sizeof(fb), "%.4g", r->fallback_ms);
  else
    snprintf(fb, sizeof(fb), "unknown");
  if (r->roofline_ms > 0) {
    snprintf(roof, sizeof(roof), "%.4g", r->roofline_ms);
    snprintf(frac, sizeof(frac), "%.1f%%", 100.0 * r->roofline_ms / r->best_ms);
  } else {
    snprintf(roof, sizeof(roof), "unknown");
    snprintf(frac, sizeof(frac), "an unknown fraction");
  }
  safe_name(subj, name, sizeof(name));
  lf_strbuf_t basis;
  lf_strbuf_init(&basis, 512);
  if (!s)
    s = append_safe(&basis, r->roofline_basis ? r->roofline_basis : "",
                    r->roofline_basis ? strnlen(r->roofline_basis, 400) : 0);
  if (!s) {
    const slot_t slots[] = {
        {"round", rd},
        {"max_rounds", mr},
        {"status", lf_strbuf_cstr(&status)},
        {"best_ms", best},
        {"fallback_ms", fb},
        {"roofline_ms", roof},
        {"roofline_basis", lf_strbuf_cstr(&basis)},
        {"fraction", frac},
        {"name", name},
        {"tune_example", "`// llm-fuse.tune BLOCK = 128, 256` and `{{BLOCK}}` "
                         "where the value goes"}};
    s = fill(set->refine, slots, sizeof(slots) / sizeof(slots[0]), out);
  }
  lf_strbuf_free(&basis);
  lf_strbuf_free(&status);
  lf_strbuf_free(&err);
  return s;
}

/* How a model answers with a template (contains double braces, so it is
 * filled in by code, as refine's tune_example). */
static const char template_syntax[] =
    "If the kernel can serve other sizes of this pattern as well, answer "
    "with a template: declare each size it leaves free on its own line "
    "inside the `gpu.module` as `// llm-fuse.template-size SK` (S0, S1, ... "
    "are the sizes listed under \"This subgraph\" above), write that size "
    "as `{{SK}}` or an expression of it such as `{{S0 / 64}}` wherever it "
    "appears (shapes, constants, launch sizes), and state what the kernel "
    "needs with `// llm-fuse.tune-require` lines such as "
    "`// llm-fuse.tune-require S1 % 256 == 0`. Each declared size is bound "
    "to this subgraph's before the kernel is built and verified; once "
    "verified, the template serves later subgraphs of this pattern at sizes "
    "its requirements admit, without a request. Otherwise write the kernel "
    "for this subgraph's sizes only.";

lf_status_t lf_prompt_adapt(const lf_prompt_set_t *set,
                            const lf_prompt_subject_t *subj,
                            const lf_prompt_adapt_t *a, lf_strbuf_t *out) {
  LF_RETURN_IF_ERROR(check_subject(subj));
  if (!a || !a->from || !a->text || !a->reason ||
      a->num_sizes > LF_TABLE_MAX_SIZES)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "an adapt request needs the kernel, where it came from "
                     "and why it does not apply");
  parts_t p;
  lf_strbuf_t base, reason, at, sizes;
  lf_strbuf_init(&base, LF_PROMPT_MAX_EXAMPLE + 4096);
  lf_strbuf_init(&reason, LF_PROMPT_MAX_ERROR + 64);
  lf_strbuf_init(&at, 1024);
  lf_strbuf_init(&sizes, 1024);
  char from[512];
  safe_line(a->from, from, sizeof(from));
  lf_status_t s = parts_make(subj, &p);
  if (!s)
    s = clean_error(a->reason, &reason);
  if (!s && a->num_sizes)
    s = append_sizes(&at, a->sizes, a->num_sizes);
  else if (!s)
    s = lf_strbuf_append_str(&at, "its own sizes");
  if (!s && subj->pattern_sizes && subj->num_pattern_sizes)
    s = append_sizes(&sizes, subj->pattern_sizes, subj->num_pattern_sizes);
  else if (!s)
    s = lf_strbuf_append_str(&sizes, "the sizes of its signature");
  bool is_template = lf_table_is_template(a->text);
  if (!s)
    s = lf_strbuf_append_str(
        &base,
        is_template
            ? "It is a template: `{{S0}}`-style placeholders are its sizes, "
              "declared free by its `// llm-fuse.template-size SK` lines; "
              "the sizes it does not declare are fixed as listed above."
            : "It is written for the sizes it was verified at.");
  if (!s)
    s = lf_strbuf_append_str(&base, "\n\n```mlir\n");
  if (!s)
    s = append_capped(&base, a->text, strlen(a->text));
  if (!s && (!base.len || base.data[base.len - 1] != '\n'))
    s = lf_strbuf_append_str(&base, "\n");
  if (!s)
    s = lf_strbuf_append_str(&base, "```");
  if (!s) {
    const slot_t slots[] = {
        SUBJECT_SLOTS(p, set),
        {"from", from},
        {"verified_at", lf_strbuf_cstr(&at)},
        {"sizes", lf_strbuf_cstr(&sizes)},
        {"reason", lf_strbuf_cstr(&reason)},
        {"base_kernel", lf_strbuf_cstr(&base)},
        {"template_syntax", template_syntax},
    };
    s = fill(set->adapt, slots, sizeof(slots) / sizeof(slots[0]), out);
  }
  lf_strbuf_free(&sizes);
  lf_strbuf_free(&at);
  lf_strbuf_free(&reason);
  lf_strbuf_free(&base);
  parts_free(&p);
  return s;
}

lf_status_t lf_prompt_previous(const char *reply, lf_strbuf_t *out) {
  const char *r = reply ? reply : "";
  size_t n = strlen(r);
  if (n <= LF_PROMPT_MAX_PREVIOUS)
    return lf_strbuf_append(out, r, n);
  size_t cut = LF_PROMPT_MAX_PREVIOUS;
  while (cut > 0 && ((unsigned char)r[cut] & 0xC0) == 0x80)
    --cut;
  LF_RETURN_IF_ERROR(lf_strbuf_append(out, r, cut));
  return lf_strbuf_appendf(out, "\n[... %zu more bytes of this reply cut]",
                           n - cut);
}
