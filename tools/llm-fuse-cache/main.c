/* llm-fuse-cache - inspect, check, move and prune the kernel cache.
 *
 * Everything goes through llm_client/cache.h, so the tool trusts exactly
 * what a build would trust. Exit status: 0 success; 1 a failure, or corrupt
 * entries found (verify), rejected (import) or an entry not found (show);
 * 2 a usage error. See README.md in this folder.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/strbuf.h"
#include "llm_client/cache.h"
#include "llm_client/remote.h"
#include "llm_client/sign.h"
#include "llm_client/table.h"

#define PROG "llm-fuse-cache"
#define EXIT_USAGE 2
#define TEMP_GRACE_S 3600 /* prune leaves younger temp files: writers' */

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: " PROG " [--cache-dir DIR] <command> [options]\n"
      "\n"
      "The kernel cache: one verified (or rejected) LLM kernel per key of\n"
      "fingerprint, arch, toolchain, provider, model and prompt version.\n"
      "\n"
      "Commands:\n"
      "  list [--json]          every entry file: digest, fingerprint, arch,\n"
      "                         status, size, created, provider/model\n"
      "  show <digest-prefix> [--kernel | --ptx | --cubin-out FILE]\n"
      "                         one entry's details, or just its kernel text,\n"
      "                         its PTX, or its cubin written to FILE\n"
      "  verify                 check every entry's schema and checksum;\n"
      "                         exit 1 naming the corrupt files, if any\n"
      "  export <FILE|DIR|->    copy the valid entries to a JSON-lines bundle\n"
      "                         (one entry file per line), to a cache tree in\n"
      "                         DIR (an existing folder, or a path that\n"
      "                         ends in /), or to stdout (-)\n"
      "  import <FILE|DIR|->    validate and add the entries of a bundle or a\n"
      "                         cache tree; corrupt ones are rejected and\n"
      "                         counted (exit 1); identical ones are skipped\n"
      "  prune [--older-than DAYS] [--unverified] [--rejected] [--corrupt]\n"
      "        [--dry-run]      remove entries matching any of the criteria;\n"
      "                         --corrupt also removes temp files of writes\n"
      "                         interrupted over an hour ago\n"
      "  remove <digest-prefix> remove one entry\n"
      "\n"
      "Seeding (tests and replay sets):\n"
      "  put --fingerprint HEX --arch SM --toolchain T --provider P --model M\n"
      "      --prompt-version V --kernel FILE [--ptx FILE] [--cubin FILE]\n"
      "      [--status verified|rejected|unverified] [--verification "
      "JSON|@FILE]\n"
      "      [--attempts N] [--created YYYY-MM-DDTHH:MM:SSZ]\n"
      "                         store one entry; prints its digest\n"
      "\n"
      "Sharing (an HTTP store with GET/PUT/HEAD: nginx WebDAV, bazel-remote,\n"
      "S3 gateways; entries at <URL>/v1/<2 hex>/<digest>.json):\n"
      "  push [--all]           PUT every valid local entry the store lacks\n"
      "                         (HEAD first; --all: PUT them all)\n"
      "  pull (DIGEST... | --report FILE)\n"
      "                         fetch entries (those a pass report names)\n"
      "                         into the local cache, with a build's checks:\n"
      "                         verdicts without a trusted signature are\n"
      "                         demoted to unverified; refused answers exit 1\n"
      "  sync [DIGEST... | --report FILE]\n"
      "                         push, then pull\n"
      "  keygen FILE [--comment TEXT]\n"
      "                         make an Ed25519 key pair: FILE (private, mode\n"
      "                         600) and FILE.pub (the trusted-keys line,\n"
      "                         also printed)\n"
      "\n"
      "The pattern table (templates by pattern key; docs/pattern-table.md):\n"
      "  table list [--json] [--table-dir DIR]\n"
      "                         every valid entry: pattern, class, archs, sizes\n"
      "                         (* free), source; exit 1 if one is corrupt\n"
      "  table export DIR [--table-dir DIR2]\n"
      "                         copy the valid entries to DIR/v1/ (signed\n"
      "                         with --signing-key when given)\n"
      "  table import DIR [--table-dir DIR2] [--require-signed]\n"
      "                         validate DIR's entries, copy the valid ones in;\n"
      "                         with --trusted-keys a signature that does not\n"
      "                         verify under them is forged (refused), and\n"
      "                         --require-signed refuses unsigned entries\n"
      "                         (default table: $LLM_FUSE_TABLE_DIR, else the\n"
      "                         shipped kernels/table)\n"
      "\n"
      "Options:\n"
      "  --remote URL           the store (default $LLM_FUSE_REMOTE_CACHE)\n"
      "  --remote-timeout S     seconds per request (default 5)\n"
      "  --signing-key FILE     sign what put stores (default\n"
      "                         $LLM_FUSE_SIGNING_KEY)\n"
      "  --trusted-keys FILE    keys whose signatures make a remote verdict\n"
      "                         count (default $LLM_FUSE_TRUSTED_KEYS)\n"
      "  --cache-dir DIR        the cache (default: $LLM_FUSE_CACHE_DIR, else\n"
      "                         $XDG_CACHE_HOME/llm-fuse, else\n"
      "                         ~/.cache/llm-fuse)\n"
      "  --api-key-env NAME     variable whose value may never be written "
      "into\n"
      "                         the cache (default OPENAI_API_KEY)\n"
      "  -h, --help             this text\n"
      "\n"
      "Exit status: 0 success, 1 failure or corrupt entries, 2 usage error.\n");
}

/* ---- Common plumbing -----------------------------------------------------*/

/* Prints `status` with a prefix and frees it; returns 1. */
static int fail(const char *what, lf_status_t status) {
  fprintf(stderr, PROG ": %s%s%s\n", what ? what : "", what ? ": " : "",
          lf_status_message(status));
  lf_status_free(status);
  return 1;
}

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, PROG ": ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry '" PROG " --help'.\n");
  return EXIT_USAGE;
}

typedef struct args_s {
  int argc;
  char **argv;
  int i; /* next unread */
} args_t;

/* True when argv[i] is `name` or `name=...`; sets *value (NULL for a flag
 * without one) and advances. A value-taking option takes the next word
 * when no '=' is given. */
static bool take(args_t *a, const char *name, bool has_value,
                 const char **value, int *rc) {
  const char *arg = a->argv[a->i];
  size_t n = strlen(name);
  if (strncmp(arg, name, n) != 0 || (arg[n] != '\0' && arg[n] != '='))
    return false;
  *value = NULL;
  if (!has_value) {
    if (arg[n] == '=') {
      *rc = usage_error("option '%s' takes no value", name);
      return true;
    }
    ++a->i;
    return true;
  }
  if (arg[n] == '=') {
    *value = arg + n + 1;
    ++a->i;
  } else if (a->i + 1 < a->argc) {
    *value = a->argv[a->i + 1];
    a->i += 2;
  } else {
    *rc = usage_error("option '%s' needs a value", name);
  }
  return true;
}

typedef struct ctx_s {
  lf_cache_t *cache;
  const char *api_key_env;
  lf_remote_t *remote;   /* --remote or $LLM_FUSE_REMOTE_CACHE */
  lf_signer_t *signer;   /* --signing-key or $LLM_FUSE_SIGNING_KEY */
  lf_keyring_t *trusted; /* --trusted-keys or $LLM_FUSE_TRUSTED_KEYS */
} ctx_t;

static lf_status_t open_cache(const char *dir, const char *api_key_env,
                              lf_cache_t **out) {
  lf_cache_options_t o;
  lf_cache_options_init(&o);
  if (api_key_env)
    o.api_key_env = api_key_env;
  return lf_cache_open(dir, &o, out);
}

/* The cache the command works on, with the keys and the store. */
static lf_status_t open_main_cache(ctx_t *c, const char *dir) {
  lf_cache_options_t o;
  lf_cache_options_init(&o);
  if (c->api_key_env)
    o.api_key_env = c->api_key_env;
  o.signer = c->signer;
  o.trusted = c->trusted;
  o.remote = c->remote;
  return lf_cache_open(dir, &o, &c->cache);
}

static const char *option_or_env(const char *value, const char *env) {
  if (value && *value)
    return value;
  const char *v = getenv(env);
  return v && *v ? v : NULL;
}

/* Reads a whole file (NUL bytes refused when `text`). */
static lf_status_t read_input(const char *path, bool text, lf_strbuf_t *out) {
  lf_strbuf_init(out, LF_CACHE_MAX_ENTRY_BYTES);
  lf_status_t s = lf_read_file(path, out);
  if (!s && text && memchr(lf_strbuf_cstr(out), '\0', out->len))
    s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "'%s' contains a NUL byte", path);
  return s;
}

static void format_created(int64_t t, char out[32]) {
  lf_status_t s = lf_cache_time_format(t, out);
  if (s)
    snprintf(out, 32, "?");
  lf_status_free(s);
}

/* ---- Walking with a digest prefix ----------------------------------------*/

typedef struct match_s {
  const char *prefix;
  size_t count;
  char digest[LF_SHA256_HEX_SIZE];
  char path[4096];
  lf_cache_file_state_t state;
  char reason[1024];
  uint64_t size;
} match_t;

static bool on_match(const lf_cache_file_t *f, void *user) {
  match_t *m = user;
  if (f->state == LF_CACHE_FILE_TEMP || !*f->digest ||
      strncmp(f->digest, m->prefix, strlen(m->prefix)) != 0)
    return true;
  if (m->count++ == 0) {
    snprintf(m->digest, sizeof(m->digest), "%s", f->digest);
    snprintf(m->path, sizeof(m->path), "%s", f->path);
    snprintf(m->reason, sizeof(m->reason), "%s", f->reason);
    m->state = f->state;
    m->size = f->size;
  }
  return true;
}

static bool valid_prefix(const char *p) {
  size_t n = strlen(p);
  if (n == 0 || n > 64)
    return false;
  for (size_t i = 0; i < n; ++i)
    if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
      return false;
  return true;
}

/* Finds the one file whose digest starts with `prefix`. Returns 0, or the
 * exit status after printing why not. */
static int find_one(ctx_t *c, const char *prefix, match_t *m) {
  memset(m, 0, sizeof(*m));
  m->prefix = prefix;
  if (!valid_prefix(prefix))
    return usage_error("'%s' is not a digest prefix (lower-case hex)", prefix);
  lf_status_t s = lf_cache_list(c->cache, on_match, m);
  if (s)
    return fail(NULL, s);
  if (m->count == 0) {
    fprintf(stderr, PROG ": no entry matches '%s' in %s\n", prefix,
            lf_cache_dir(c->cache));
    return 1;
  }
  if (m->count > 1) {
    fprintf(stderr, PROG ": '%s' is ambiguous: %zu entries match\n", prefix,
            m->count);
    return 1;
  }
  return 0;
}

/* ---- list ----------------------------------------------------------------*/

typedef struct list_ctx_s {
  cJSON *array; /* --json */
  int rc;
} list_ctx_t;

static bool list_one(const lf_cache_file_t *f, void *user) {
  list_ctx_t *l = user;
  const lf_cache_entry_t *e = f->entry;
  char created[32] = "";
  if (e)
    format_created(e->provenance.created, created);
  if (l->array) {
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(l->array, o)) {
      cJSON_Delete(o);
      l->rc = 1;
      return false;
    }
    static const char *const states[] = {"ok", "corrupt", "temp"};
    cJSON_AddStringToObject(o, "state", states[f->state]);
    cJSON_AddStringToObject(o, "digest", f->digest);
    cJSON_AddStringToObject(o, "path", f->path);
    cJSON_AddNumberToObject(o, "size", (double)f->size);
    if (f->state == LF_CACHE_FILE_CORRUPT)
      cJSON_AddStringToObject(o, "reason", f->reason);
    if (e) {
      cJSON_AddStringToObject(o, "fingerprint", e->key.fingerprint);
      cJSON_AddStringToObject(o, "arch", e->key.arch);
      cJSON_AddStringToObject(o, "toolchain", e->key.toolchain);
      cJSON_AddStringToObject(o, "provider", e->key.provider);
      cJSON_AddStringToObject(o, "model", e->key.model);
      cJSON_AddStringToObject(o, "prompt_version", e->key.prompt_version);
      cJSON_AddStringToObject(o, "status", lf_cache_verdict_name(e->verdict));
      cJSON_AddStringToObject(o, "created", created);
      cJSON_AddNumberToObject(o, "attempts", e->provenance.attempts);
      cJSON_AddBoolToObject(o, "has_ptx", e->ptx != NULL);
      cJSON_AddBoolToObject(o, "has_cubin", e->cubin != NULL);
      if (e->signature.key_id[0])
        cJSON_AddStringToObject(o, "signed_by", e->signature.key_id);
      else
        cJSON_AddNullToObject(o, "signed_by");
    }
    return true;
  }
  if (f->state == LF_CACHE_FILE_OK)
    printf("%.12s  %.12s  %-7s %-10s  %8llu  %s  %s/%s\n", f->digest,
           e->key.fingerprint, e->key.arch, lf_cache_verdict_name(e->verdict),
           (unsigned long long)f->size, created, e->key.provider, e->key.model);
  else if (f->state == LF_CACHE_FILE_TEMP)
    printf("%-12.12s  TEMP      %s\n", f->digest, f->path);
  else
    printf("%-12.12s  CORRUPT   %s\n", *f->digest ? f->digest : "-", f->reason);
  return true;
}

static int cmd_list(ctx_t *c, args_t *a) {
  bool json = false;
  int rc = 0;
  const char *v;
  while (a->i < a->argc) {
    if (take(a, "--json", false, &v, &rc))
      json = true;
    else
      return usage_error("list: unexpected argument '%s'", a->argv[a->i]);
    if (rc)
      return rc;
  }
  list_ctx_t l = {NULL, 0};
  if (json && !(l.array = cJSON_CreateArray()))
    return 1;
  if (!json)
    printf("%-12s  %-12s  %-7s %-10s  %8s  %-20s  %s\n", "DIGEST",
           "FINGERPRINT", "ARCH", "STATUS", "SIZE", "CREATED",
           "PROVIDER/MODEL");
  lf_status_t s = lf_cache_list(c->cache, list_one, &l);
  if (json) {
    char *text = s ? NULL : cJSON_Print(l.array);
    if (text)
      printf("%s\n", text);
    else if (!s)
      l.rc = 1;
    cJSON_free(text);
    cJSON_Delete(l.array);
  }
  if (s)
    return fail(NULL, s);
  return l.rc;
}

/* ---- show / remove -------------------------------------------------------*/

static int cmd_show(ctx_t *c, args_t *a) {
  const char *prefix = NULL, *cubin_out = NULL, *v;
  bool kernel = false, ptx = false;
  int rc = 0;
  while (a->i < a->argc) {
    if (take(a, "--kernel", false, &v, &rc))
      kernel = true;
    else if (take(a, "--ptx", false, &v, &rc))
      ptx = true;
    else if (take(a, "--cubin-out", true, &cubin_out, &rc))
      ;
    else if (a->argv[a->i][0] == '-' || prefix)
      return usage_error("show: unexpected argument '%s'", a->argv[a->i]);
    else
      prefix = a->argv[a->i++];
    if (rc)
      return rc;
  }
  if (!prefix)
    return usage_error("show: %s", "needs a digest prefix");
  if (kernel + ptx + (cubin_out != NULL) > 1)
    return usage_error("show: %s",
                       "--kernel, --ptx and --cubin-out exclude each other");
  match_t m;
  if ((rc = find_one(c, prefix, &m)))
    return rc;
  if (m.state != LF_CACHE_FILE_OK) {
    fprintf(stderr, PROG ": corrupt entry: %s\n", m.reason);
    return 1;
  }
  lf_strbuf_t buf;
  lf_cache_entry_t *e = NULL;
  lf_status_t s = read_input(m.path, false, &buf);
  if (!s)
    s = lf_cache_entry_parse(buf.data, buf.len, NULL, m.path, &e);
  lf_strbuf_free(&buf);
  if (s)
    return fail(NULL, s);
  if (kernel) {
    fputs(e->kernel, stdout);
  } else if (ptx) {
    if (e->ptx) {
      fputs(e->ptx, stdout);
    } else {
      fprintf(stderr, PROG ": entry %.12s has no PTX\n", e->digest);
      rc = 1;
    }
  } else if (cubin_out) {
    if (!e->cubin) {
      fprintf(stderr, PROG ": entry %.12s has no cubin\n", e->digest);
      rc = 1;
    } else if ((s = lf_write_file_atomic(cubin_out, e->cubin, e->cubin_len))) {
      rc = fail(NULL, s);
    }
  } else {
    char created[32], cubin_sum[LF_SHA256_HEX_SIZE] = "";
    format_created(e->provenance.created, created);
    if (e->cubin)
      lf_status_free(lf_sha256_hex(e->cubin, e->cubin_len, cubin_sum));
    printf("digest:         %s\n", e->digest);
    printf("path:           %s\n", m.path);
    printf("size:           %llu bytes\n", (unsigned long long)m.size);
    printf("fingerprint:    %s\n", e->key.fingerprint);
    printf("arch:           %s\n", e->key.arch);
    printf("toolchain:      %s\n", e->key.toolchain);
    printf("provider:       %s\n", e->key.provider);
    printf("model:          %s\n", e->key.model);
    printf("prompt version: %s\n", e->key.prompt_version);
    printf("status:         %s\n", lf_cache_verdict_name(e->verdict));
    printf("verification:   %s\n", e->verification_json);
    printf("created:        %s\n", created);
    printf("attempts:       %d\n", e->provenance.attempts);
    printf("produced by:    %s/%s (prompt %s)\n", e->provenance.provider,
           e->provenance.model, e->provenance.prompt_version);
    printf("tool version:   %s\n", e->provenance.tool_version);
    if (e->signature.key_id[0]) {
      lf_status_t ts = lf_cache_entry_check_signature(c->trusted, e);
      printf("signed by:      key %s (%s)\n", e->signature.key_id,
             ts ? lf_status_message(ts) : "trusted, signature verifies");
      lf_status_free(ts);
    } else {
      printf("signed by:      nobody\n");
    }
    printf("kernel:         %zu bytes\n", strlen(e->kernel));
    if (e->ptx)
      printf("ptx:            %zu bytes\n", strlen(e->ptx));
    else
      printf("ptx:            none\n");
    if (e->cubin)
      printf("cubin:          %zu bytes, sha256 %s\n", e->cubin_len, cubin_sum);
    else
      printf("cubin:          none\n");
    printf("\n%s", e->kernel);
  }
  lf_cache_entry_free(e);
  return rc;
}

static int cmd_remove(ctx_t *c, args_t *a) {
  if (a->i + 1 != a->argc)
    return usage_error("remove: %s", "needs exactly one digest prefix");
  match_t m;
  int rc = find_one(c, a->argv[a->i], &m);
  if (rc)
    return rc;
  if (unlink(m.path) != 0) {
    fprintf(stderr, PROG ": cannot remove '%s': %s\n", m.path, strerror(errno));
    return 1;
  }
  printf("removed %s\n", m.digest);
  return 0;
}

/* ---- verify --------------------------------------------------------------*/

typedef struct tally_s {
  size_t ok, corrupt, temp;
} tally_t;

static bool verify_one(const lf_cache_file_t *f, void *user) {
  tally_t *t = user;
  if (f->state == LF_CACHE_FILE_OK) {
    ++t->ok;
  } else if (f->state == LF_CACHE_FILE_TEMP) {
    ++t->temp;
    printf("note: temp file of an unfinished write: %s\n", f->path);
  } else {
    ++t->corrupt;
    printf("CORRUPT %s\n", f->reason);
  }
  return true;
}

static int cmd_verify(ctx_t *c, args_t *a) {
  if (a->i != a->argc)
    return usage_error("verify: unexpected argument '%s'", a->argv[a->i]);
  tally_t t = {0, 0, 0};
  lf_status_t s = lf_cache_list(c->cache, verify_one, &t);
  if (s)
    return fail(NULL, s);
  printf("%zu entries ok, %zu corrupt", t.ok, t.corrupt);
  if (t.temp)
    printf(", %zu temp files", t.temp);
  printf(" in %s\n", lf_cache_dir(c->cache));
  if (t.corrupt)
    fprintf(stderr,
            PROG ": %zu corrupt entr%s (remove with 'prune "
                 "--corrupt')\n",
            t.corrupt, t.corrupt == 1 ? "y" : "ies");
  return t.corrupt ? 1 : 0;
}

/* ---- prune ---------------------------------------------------------------*/

typedef struct prune_s {
  bool unverified, rejected, corrupt, dry_run;
  int64_t older_than; /* created before this: removed; -1 off */
  size_t seen, removed, failed;
} prune_t;

static bool prune_one(const lf_cache_file_t *f, void *user) {
  prune_t *p = user;
  const char *why = NULL;
  char buf[64];
  ++p->seen;
  if (f->state == LF_CACHE_FILE_CORRUPT && p->corrupt) {
    why = "corrupt";
  } else if (f->state == LF_CACHE_FILE_TEMP && p->corrupt &&
             f->mtime < (int64_t)time(NULL) - TEMP_GRACE_S) {
    why = "stale temp file";
  } else if (f->state == LF_CACHE_FILE_OK) {
    const lf_cache_entry_t *e = f->entry;
    if (p->older_than >= 0 && e->provenance.created < p->older_than) {
      char created[32];
      format_created(e->provenance.created, created);
      snprintf(buf, sizeof(buf), "created %s", created);
      why = buf;
    } else if (p->unverified && e->verdict == LF_CACHE_UNVERIFIED) {
      why = "unverified";
    } else if (p->rejected && e->verdict == LF_CACHE_REJECTED) {
      why = "rejected";
    }
  }
  if (!why)
    return true;
  if (p->dry_run) {
    printf("would remove %s (%s)\n", f->path, why);
    ++p->removed;
  } else if (unlink(f->path) == 0) {
    printf("removed %s (%s)\n", f->path, why);
    ++p->removed;
  } else {
    fprintf(stderr, PROG ": cannot remove '%s': %s\n", f->path,
            strerror(errno));
    ++p->failed;
  }
  return true;
}

static int cmd_prune(ctx_t *c, args_t *a) {
  prune_t p = {0};
  p.older_than = -1;
  int rc = 0;
  const char *v;
  while (a->i < a->argc) {
    if (take(a, "--older-than", true, &v, &rc)) {
      if (rc)
        return rc;
      char *end;
      errno = 0;
      double days = strtod(v, &end);
      if (end == v || *end || errno || !(days >= 0) || days > 3650000)
        return usage_error("prune: --older-than '%s' is not a number of days",
                           v);
      p.older_than = (int64_t)time(NULL) - (int64_t)(days * 86400);
    } else if (take(a, "--unverified", false, &v, &rc)) {
      p.unverified = true;
    } else if (take(a, "--rejected", false, &v, &rc)) {
      p.rejected = true;
    } else if (take(a, "--corrupt", false, &v, &rc)) {
      p.corrupt = true;
    } else if (take(a, "--dry-run", false, &v, &rc)) {
      p.dry_run = true;
    } else {
      return usage_error("prune: unexpected argument '%s'", a->argv[a->i]);
    }
    if (rc)
      return rc;
  }
  if (p.older_than < 0 && !p.unverified && !p.rejected && !p.corrupt)
    return usage_error("prune: %s",
                       "name what to remove: --older-than DAYS, "
                       "--unverified, --rejected and/or --corrupt");
  lf_status_t s = lf_cache_list(c->cache, prune_one, &p);
  if (s)
    return fail(NULL, s);
  printf("%s %zu of %zu files\n", p.dry_run ? "would prune" : "pruned",
         p.removed, p.seen);
  return p.failed ? 1 : 0;
}

/* ---- export --------------------------------------------------------------*/

/* A bundle being written: to stdout, or to a temp file renamed at the end. */
typedef struct bundle_out_s {
  FILE *f;
  char *final_path; /* NULL for stdout */
  char *tmp_path;
} bundle_out_t;

static lf_status_t bundle_open(const char *path, bundle_out_t *b) {
  memset(b, 0, sizeof(*b));
  if (strcmp(path, "-") == 0) {
    b->f = stdout;
    return LF_OK;
  }
  size_t n = strlen(path) + 16;
  b->final_path = strdup(path);
  b->tmp_path = malloc(n);
  if (!b->final_path || !b->tmp_path)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  snprintf(b->tmp_path, n, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(b->tmp_path);
  if (fd < 0 || !(b->f = fdopen(fd, "wb"))) {
    if (fd >= 0)
      close(fd);
    return LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot create '%s': %s",
                     b->tmp_path, strerror(errno));
  }
  return LF_OK;
}

/* Finishes (commit) or abandons the bundle. */
static lf_status_t bundle_close(bundle_out_t *b, bool commit) {
  lf_status_t s = LF_OK;
  if (b->f && b->f != stdout) {
    bool ok = fflush(b->f) == 0 && fsync(fileno(b->f)) == 0 &&
              fchmod(fileno(b->f), 0644) == 0;
    ok = fclose(b->f) == 0 && ok;
    if (commit && !ok)
      s = LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot write '%s': %s", b->tmp_path,
                    strerror(errno));
    if (commit && ok && rename(b->tmp_path, b->final_path) != 0)
      s = LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot rename '%s' to '%s': %s",
                    b->tmp_path, b->final_path, strerror(errno));
    if (!commit || s)
      unlink(b->tmp_path);
  } else if (b->f == stdout && fflush(stdout) != 0) {
    s = LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot write to stdout");
  }
  free(b->final_path);
  free(b->tmp_path);
  memset(b, 0, sizeof(*b));
  return s;
}

typedef struct export_s {
  bundle_out_t bundle; /* file mode */
  lf_cache_t *dest;    /* folder mode */
  size_t exported, skipped_corrupt;
  lf_status_t error;
} export_t;

static bool export_one(const lf_cache_file_t *f, void *user) {
  export_t *x = user;
  if (f->state == LF_CACHE_FILE_TEMP)
    return true;
  if (f->state == LF_CACHE_FILE_CORRUPT) {
    fprintf(stderr, PROG ": skipping corrupt %s\n", f->reason);
    ++x->skipped_corrupt;
    return true;
  }
  lf_strbuf_t buf;
  lf_status_t s = read_input(f->path, false, &buf);
  if (!s && x->dest)
    s = lf_cache_store_raw(x->dest, buf.data, buf.len, f->path, NULL, NULL);
  else if (!s && fwrite(buf.data, 1, buf.len, x->bundle.f) != buf.len)
    s = LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot write the bundle: %s",
                  strerror(errno));
  lf_strbuf_free(&buf);
  if (lf_status_code(s) == LF_STATUS_DATA_LOSS) {
    /* Changed since it was listed: as corrupt as it gets. */
    fprintf(stderr, PROG ": skipping corrupt %s\n", lf_status_message(s));
    lf_status_free(s);
    ++x->skipped_corrupt;
    return true;
  }
  if (s) {
    x->error = s;
    return false;
  }
  ++x->exported;
  return true;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int cmd_export(ctx_t *c, args_t *a) {
  if (a->i + 1 != a->argc)
    return usage_error("export: %s", "needs exactly one destination");
  const char *dest = a->argv[a->i];
  size_t n = strlen(dest);
  bool dir_mode = n && (dest[n - 1] == '/' || is_dir(dest));
  export_t x = {0};
  lf_status_t s = dir_mode ? open_cache(dest, c->api_key_env, &x.dest)
                           : bundle_open(dest, &x.bundle);
  if (!s && x.dest && strcmp(lf_cache_dir(x.dest), lf_cache_dir(c->cache)) == 0)
    s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                  "export: the destination is the cache itself");
  if (!s)
    s = lf_cache_list(c->cache, export_one, &x);
  if (!s) {
    s = x.error;
    x.error = NULL;
  }
  if (!dir_mode) {
    lf_status_t cs = bundle_close(&x.bundle, !s);
    if (!s)
      s = cs;
    else
      lf_status_free(cs);
  }
  lf_cache_close(x.dest);
  if (s)
    return fail("export", s);
  fprintf(stderr, PROG ": exported %zu entr%s to %s", x.exported,
          x.exported == 1 ? "y" : "ies", strcmp(dest, "-") ? dest : "stdout");
  if (x.skipped_corrupt)
    fprintf(stderr, " (%zu corrupt skipped)", x.skipped_corrupt);
  fprintf(stderr, "\n");
  return 0;
}

/* ---- import --------------------------------------------------------------*/

typedef struct import_s {
  lf_cache_t *cache;
  size_t imported, unchanged, rejected;
  lf_status_t error;
} import_t;

/* Imports one entry's bytes; counts it. False when the import must stop. */
static bool import_bytes(import_t *im, const char *data, size_t len,
                         const char *origin) {
  bool written = false;
  lf_status_t s =
      lf_cache_store_raw(im->cache, data, len, origin, NULL, &written);
  if (lf_status_code(s) == LF_STATUS_DATA_LOSS ||
      lf_status_code(s) == LF_STATUS_PERMISSION_DENIED) {
    /* DATA_LOSS messages start with the origin already. */
    fprintf(stderr, PROG ": rejected %s%s%s\n",
            lf_status_code(s) == LF_STATUS_DATA_LOSS ? "" : origin,
            lf_status_code(s) == LF_STATUS_DATA_LOSS ? "" : ": ",
            lf_status_message(s));
    lf_status_free(s);
    ++im->rejected;
    return true;
  }
  if (s) {
    im->error = s;
    return false;
  }
  if (written)
    ++im->imported;
  else
    ++im->unchanged;
  return true;
}

static bool import_file(const lf_cache_file_t *f, void *user) {
  import_t *im = user;
  if (f->state == LF_CACHE_FILE_TEMP)
    return true;
  if (f->state == LF_CACHE_FILE_CORRUPT) {
    fprintf(stderr, PROG ": rejected %s\n", f->reason);
    ++im->rejected;
    return true;
  }
  lf_strbuf_t buf;
  lf_status_t s = read_input(f->path, false, &buf);
  bool go_on = true;
  if (s) {
    im->error = s;
    go_on = false;
  } else {
    go_on = import_bytes(im, buf.data, buf.len, f->path);
  }
  lf_strbuf_free(&buf);
  return go_on;
}

/* Reads a JSON-lines bundle, one entry per line, each capped. */
static lf_status_t import_bundle(import_t *im, const char *path) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f)
    return LF_STATUS(errno == ENOENT ? LF_STATUS_NOT_FOUND
                                     : LF_STATUS_UNAVAILABLE,
                     "cannot open '%s': %s", path, strerror(errno));
  const char *name = f == stdin ? "stdin" : path;
  lf_strbuf_t line;
  lf_strbuf_init(&line, LF_CACHE_MAX_ENTRY_BYTES);
  lf_status_t status = LF_OK;
  size_t lineno = 0;
  bool too_long = false, more = true;
  char origin[4200];
  while (more && !im->error) {
    int ch = getc(f);
    if (ch != EOF && ch != '\n') {
      char cc = (char)ch;
      lf_status_t s = too_long ? LF_OK : lf_strbuf_append(&line, &cc, 1);
      if (s) {
        lf_status_free(s);
        too_long = true;
      }
      continue;
    }
    more = ch != EOF;
    if (ch == EOF && line.len == 0 && !too_long)
      break;
    ++lineno;
    snprintf(origin, sizeof(origin), "%s:%zu", name, lineno);
    if (too_long) {
      fprintf(stderr, PROG ": rejected %s: longer than %zu MiB\n", origin,
              LF_CACHE_MAX_ENTRY_BYTES >> 20);
      ++im->rejected;
    } else if (line.len > 0) {
      char nl = '\n'; /* entry files end in one; the cap counts it */
      lf_status_t s = lf_strbuf_append(&line, &nl, 1);
      if (s) {
        lf_status_free(s);
        fprintf(stderr, PROG ": rejected %s: longer than %zu MiB\n", origin,
                LF_CACHE_MAX_ENTRY_BYTES >> 20);
        ++im->rejected;
      } else {
        import_bytes(im, line.data, line.len, origin);
      }
    }
    lf_strbuf_reset(&line);
    too_long = false;
  }
  if (ferror(f))
    status = LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot read '%s'", name);
  if (f != stdin)
    fclose(f);
  lf_strbuf_free(&line);
  return status;
}

static int cmd_import(ctx_t *c, args_t *a) {
  if (a->i + 1 != a->argc)
    return usage_error("import: %s", "needs exactly one source");
  const char *src = a->argv[a->i];
  import_t im = {c->cache, 0, 0, 0, NULL};
  lf_status_t s = LF_OK;
  if (is_dir(src)) {
    lf_cache_t *from = NULL;
    s = open_cache(src, "", &from);
    if (!s && strcmp(lf_cache_dir(from), lf_cache_dir(c->cache)) == 0)
      s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                    "the source is the cache itself");
    if (!s)
      s = lf_cache_list(from, import_file, &im);
    lf_cache_close(from);
  } else {
    s = import_bundle(&im, src);
  }
  if (!s) {
    s = im.error;
    im.error = NULL;
  }
  lf_status_free(im.error);
  if (s)
    return fail("import", s);
  printf("imported %zu, unchanged %zu, rejected %zu\n", im.imported,
         im.unchanged, im.rejected);
  return im.rejected ? 1 : 0;
}

/* ---- put -----------------------------------------------------------------*/

static int cmd_put(ctx_t *c, args_t *a) {
  lf_cache_key_t key = {0};
  const char *kernel = NULL, *ptx = NULL, *cubin = NULL, *verification = NULL;
  const char *status_name = "unverified", *attempts = NULL, *created = NULL;
  int rc = 0;
  while (a->i < a->argc) {
    if (!take(a, "--fingerprint", true, &key.fingerprint, &rc) &&
        !take(a, "--arch", true, &key.arch, &rc) &&
        !take(a, "--toolchain", true, &key.toolchain, &rc) &&
        !take(a, "--provider", true, &key.provider, &rc) &&
        !take(a, "--model", true, &key.model, &rc) &&
        !take(a, "--prompt-version", true, &key.prompt_version, &rc) &&
        !take(a, "--kernel", true, &kernel, &rc) &&
        !take(a, "--ptx", true, &ptx, &rc) &&
        !take(a, "--cubin", true, &cubin, &rc) &&
        !take(a, "--status", true, &status_name, &rc) &&
        !take(a, "--verification", true, &verification, &rc) &&
        !take(a, "--attempts", true, &attempts, &rc) &&
        !take(a, "--created", true, &created, &rc))
      return usage_error("put: unexpected argument '%s'", a->argv[a->i]);
    if (rc)
      return rc;
  }
  static const char *const required[] = {"--fingerprint", "--arch",
                                         "--toolchain",   "--provider",
                                         "--model",       "--prompt-version"};
  const char *fields[] = {key.fingerprint, key.arch,  key.toolchain,
                          key.provider,    key.model, key.prompt_version};
  for (int i = 0; i < 6; ++i)
    if (!fields[i])
      return usage_error("put: %s is required", required[i]);
  if (!kernel)
    return usage_error("put: %s is required", "--kernel FILE");

  lf_cache_entry_t e = {0};
  lf_strbuf_t kbuf = {0}, pbuf = {0}, cbuf = {0}, vbuf = {0};
  lf_status_t s = lf_cache_verdict_parse(status_name, &e.verdict);
  if (!s && attempts) {
    char *end;
    long n = strtol(attempts, &end, 10);
    if (end == attempts || *end || n < 0 || n > 1000000)
      s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                    "--attempts '%s' is not a count", attempts);
    e.provenance.attempts = (int)n;
  }
  if (!s && created)
    s = lf_cache_time_parse(created, &e.provenance.created);
  if (!s && (s = read_input(kernel, true, &kbuf)) == LF_OK)
    e.kernel = kbuf.data ? kbuf.data : "";
  if (!s && ptx && (s = read_input(ptx, true, &pbuf)) == LF_OK)
    e.ptx = pbuf.data ? pbuf.data : "";
  if (!s && cubin && (s = read_input(cubin, false, &cbuf)) == LF_OK) {
    e.cubin = (unsigned char *)cbuf.data;
    e.cubin_len = cbuf.len;
    if (!cbuf.len)
      s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "cubin '%s' is empty", cubin);
  }
  if (!s && verification) {
    if (verification[0] == '@') {
      if ((s = read_input(verification + 1, true, &vbuf)) == LF_OK)
        e.verification_json = vbuf.data ? vbuf.data : "";
    } else {
      e.verification_json = (char *)verification;
    }
  }
  char digest[LF_SHA256_HEX_SIZE];
  if (!s)
    s = lf_cache_store(c->cache, &key, &e, digest);
  lf_strbuf_free(&kbuf);
  lf_strbuf_free(&pbuf);
  lf_strbuf_free(&cbuf);
  lf_strbuf_free(&vbuf);
  if (s)
    return fail("put", s);
  printf("%s\n", digest);
  return 0;
}

/* ---- keygen / push / pull / sync ---------------------------------------*/

static int cmd_keygen(ctx_t *c, args_t *a) {
  (void)c;
  const char *path = NULL, *comment = NULL, *v;
  int rc = 0;
  while (a->i < a->argc) {
    if (take(a, "--comment", true, &comment, &rc))
      ;
    else if (a->argv[a->i][0] == '-' || path)
      return usage_error("keygen: unexpected argument '%s'", a->argv[a->i]);
    else
      path = a->argv[a->i++];
    if (rc)
      return rc;
  }
  (void)v;
  if (!path)
    return usage_error("keygen: %s", "needs the private key's file name");
  lf_strbuf_t line, pub;
  lf_strbuf_init(&line, 4096);
  lf_strbuf_init(&pub, 4200);
  lf_status_t s = lf_sign_keygen(path, comment, &line);
  if (!s)
    s = lf_strbuf_appendf(&pub, "%s.pub", path);
  if (!s)
    s = lf_write_file_atomic(pub.data, line.data, line.len);
  if (!s) {
    fputs(line.data, stdout);
    fprintf(stderr,
            PROG ": private key in %s (mode 600: keep it on the machine that "
            "verifies); public key line in %s (add it to the readers' "
            "trusted-keys file)\n",
            path, pub.data);
  }
  lf_strbuf_free(&line);
  lf_strbuf_free(&pub);
  return s ? fail("keygen", s) : 0;
}

static int need_remote(const ctx_t *c, const char *cmd) {
  if (c->remote)
    return 0;
  return usage_error("%s: needs a store: --remote URL or "
                     "$" LF_REMOTE_URL_ENV,
                     cmd);
}

typedef struct push_ctx_s {
  ctx_t *c;
  bool all;
  long pushed, present, failed, corrupt;
} push_ctx_t;

static bool push_one(const lf_cache_file_t *f, void *user) {
  push_ctx_t *p = user;
  if (f->state != LF_CACHE_FILE_OK) {
    p->corrupt += f->state == LF_CACHE_FILE_CORRUPT;
    return true;
  }
  bool pushed = false;
  lf_status_t s = lf_cache_push(p->c->cache, f->digest, !p->all, &pushed);
  if (s) {
    fprintf(stderr, PROG ": push %.12s: %s\n", f->digest,
            lf_status_message(s));
    ++p->failed;
    bool down = lf_status_code(s) == LF_STATUS_UNAVAILABLE &&
                lf_remote_is_down(p->c->remote);
    lf_status_free(s);
    return !down; /* a dead store: stop */
  }
  if (pushed)
    ++p->pushed;
  else
    ++p->present;
  return true;
}

static int do_push(ctx_t *c, bool all) {
  push_ctx_t p = {c, all, 0, 0, 0, 0};
  lf_status_t s = lf_cache_list(c->cache, push_one, &p);
  if (s)
    return fail("push", s);
  printf("push: %ld pushed, %ld already in the store, %ld failed, %ld "
         "corrupt local file(s) skipped (%s)\n",
         p.pushed, p.present, p.failed, p.corrupt,
         lf_remote_display_url(c->remote));
  return p.failed ? 1 : 0;
}

static int cmd_push(ctx_t *c, args_t *a) {
  bool all = false;
  int rc = 0;
  const char *v;
  while (a->i < a->argc) {
    if (take(a, "--all", false, &v, &rc))
      all = true;
    else
      return usage_error("push: unexpected argument '%s'", a->argv[a->i]);
    if (rc)
      return rc;
  }
  if ((rc = need_remote(c, "push")))
    return rc;
  return do_push(c, all);
}

/* Appends every cache_key of a pass report's subgraphs to `out` (a list of
 * 65-byte slots). */
static lf_status_t report_keys(const char *path, char (**out)[65],
                               size_t *n) {
  lf_strbuf_t buf;
  lf_status_t s = read_input(path, true, &buf);
  cJSON *root = s ? NULL : cJSON_ParseWithLength(buf.data, buf.len);
  lf_strbuf_free(&buf);
  if (s)
    return s;
  const cJSON *subs =
      root ? cJSON_GetObjectItemCaseSensitive(root, "subgraphs") : NULL;
  if (!cJSON_IsArray(subs)) {
    cJSON_Delete(root);
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "'%s' is not an llm-fuse report (no subgraphs array)",
                     path);
  }
  const cJSON *sg;
  cJSON_ArrayForEach(sg, subs) {
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(sg, "cache_key");
    if (!cJSON_IsString(k) || strlen(k->valuestring) != 64)
      continue;
    char(*grown)[65] = realloc(*out, (*n + 1) * sizeof(**out));
    if (!grown) {
      cJSON_Delete(root);
      return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    }
    *out = grown;
    snprintf((*out)[(*n)++], 65, "%s", k->valuestring);
  }
  cJSON_Delete(root);
  return LF_OK;
}

static int do_pull(ctx_t *c, char (*digests)[65], size_t n) {
  long fetched = 0, demoted = 0, missing = 0, refused = 0, failed = 0;
  for (size_t i = 0; i < n; ++i) {
    lf_cache_entry_t *e = NULL;
    lf_cache_outcome_t outcome = LF_CACHE_MISS;
    lf_status_t s = lf_cache_pull(c->cache, digests[i], &e, &outcome);
    if (s) {
      bool down = lf_status_code(s) == LF_STATUS_UNAVAILABLE;
      printf("%.12s  %s  %s\n", digests[i], down ? "FAILED " : "REFUSED",
             lf_status_message(s));
      if (outcome == LF_CACHE_CORRUPT)
        ++refused;
      else
        ++failed;
      lf_status_free(s);
      if (down)
        break;
      continue;
    }
    if (outcome != LF_CACHE_HIT) {
      printf("%.12s  MISSING  not in the store\n", digests[i]);
      ++missing;
      continue;
    }
    ++fetched;
    demoted += e->trust == LF_CACHE_TRUST_DEMOTED;
    printf("%.12s  %-7s  %s\n", digests[i],
           e->trust == LF_CACHE_TRUST_DEMOTED ? "DEMOTED" : "OK",
           e->trust_note);
    lf_cache_entry_free(e);
  }
  printf("pull: %ld fetched (%ld demoted to unverified), %ld not in the "
         "store, %ld refused, %ld failed (%s)\n",
         fetched, demoted, missing, refused, failed,
         lf_remote_display_url(c->remote));
  return refused || failed ? 1 : 0;
}

/* Reads the digests of a pull or sync: DIGEST words and --report FILE. */
static int pull_args(args_t *a, const char *cmd, char (**digests)[65],
                     size_t *n) {
  int rc = 0;
  const char *report = NULL;
  while (a->i < a->argc) {
    if (take(a, "--report", true, &report, &rc)) {
      if (rc)
        return rc;
      lf_status_t s = report_keys(report, digests, n);
      if (s)
        return fail(cmd, s);
      continue;
    }
    if (rc)
      return rc;
    const char *d = a->argv[a->i++];
    if (!valid_prefix(d) || strlen(d) != 64)
      return usage_error("'%s' is not a 64-hex-digit cache digest", d);
    char(*grown)[65] = realloc(*digests, (*n + 1) * sizeof(**digests));
    if (!grown)
      return 1;
    *digests = grown;
    snprintf((*digests)[(*n)++], 65, "%s", d);
  }
  return 0;
}

static int cmd_pull(ctx_t *c, args_t *a) {
  char(*digests)[65] = NULL;
  size_t n = 0;
  int rc = pull_args(a, "pull", &digests, &n);
  if (!rc && !n)
    rc = usage_error("pull: %s", "needs digests or --report FILE (a plain "
                                 "HTTP store cannot be listed)");
  if (!rc)
    rc = need_remote(c, "pull");
  if (!rc)
    rc = do_pull(c, digests, n);
  free(digests);
  return rc;
}

static int cmd_sync(ctx_t *c, args_t *a) {
  char(*digests)[65] = NULL;
  size_t n = 0;
  int rc = pull_args(a, "sync", &digests, &n);
  if (!rc)
    rc = need_remote(c, "sync");
  if (!rc) {
    int prc = do_push(c, false);
    rc = n ? do_pull(c, digests, n) : 0;
    rc = rc ? rc : prc;
  }
  free(digests);
  return rc;
}

/* ---- table ---------------------------------------------------------------*/

typedef struct table_ctx_s {
  const char *dest; /* export/import: the folder written */
  long copied, failed;
  bool json;
  cJSON *array;
  const lf_signer_t *signer; /* export: signs the copies */
} table_ctx_t;

static bool table_list_one(const lf_table_info_t *in, void *user) {
  table_ctx_t *t = user;
  char sizes[256] = "", archs[128] = "";
  size_t n = 0, m = 0;
  for (size_t i = 0; i < in->num_sizes && n < sizeof(sizes) - 32; ++i)
    n += (size_t)(in->fixed[i] < 0
                      ? snprintf(sizes + n, sizeof(sizes) - n, "%sS%zu=*",
                                 i ? "," : "", i)
                      : snprintf(sizes + n, sizeof(sizes) - n, "%sS%zu=%lld",
                                 i ? "," : "", i, (long long)in->fixed[i]));
  for (size_t i = 0; i < in->num_archs && m < sizeof(archs) - 16; ++i)
    m += (size_t)snprintf(archs + m, sizeof(archs) - m, "%s%s", i ? "," : "",
                          in->archs[i]);
  if (t->array) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "pattern", in->pattern);
    cJSON_AddStringToObject(o, "class", in->klass);
    cJSON_AddStringToObject(o, "archs", archs);
    cJSON_AddStringToObject(o, "sizes", sizes);
    cJSON_AddStringToObject(o, "path", in->path);
    cJSON_AddStringToObject(o, "source", in->source);
    cJSON_AddStringToObject(o, "signed_by", in->signed_by);
    cJSON_AddItemToArray(t->array, o);
  } else {
    printf("%.16s  %-12s %-20s %-24s %s%s%s\n", in->pattern, in->klass, archs,
           sizes, in->source, in->signed_by[0] ? "; signed by " : "",
           in->signed_by);
  }
  return true;
}

static bool table_copy_one(const lf_table_info_t *in, void *user) {
  table_ctx_t *t = user;
  const char *base = strrchr(in->path, '/');
  base = base ? base + 1 : in->path;
  /* A compressed entry is exported as its JSON text. */
  size_t base_len = strlen(base);
  if (base_len > 3 && strcmp(base + base_len - 3, ".gz") == 0)
    base_len -= 3;
  lf_strbuf_t data, dst;
  lf_strbuf_init(&data, LF_TABLE_MAX_ENTRY_BYTES + 65536);
  lf_strbuf_init(&dst, 4096);
  lf_status_t s = lf_table_read_entry_file(in->path, &data);
  char *signed_text = NULL;
  if (!s && t->signer)
    s = lf_table_sign_entry(in->path, data.data, data.len, t->signer,
                            &signed_text);
  if (!s)
    s = lf_strbuf_appendf(&dst, "%s/v1", t->dest);
  if (!s)
    s = lf_make_dirs(dst.data);
  if (!s)
    s = lf_strbuf_appendf(&dst, "/%.*s", (int)base_len, base);
  if (!s)
    s = signed_text
            ? lf_write_file_atomic(dst.data, signed_text, strlen(signed_text))
            : lf_write_file_atomic(dst.data, data.data, data.len);
  free(signed_text);
  if (s) {
    fprintf(stderr, PROG ": table: %s: %s\n", base, lf_status_message(s));
    lf_status_free(s);
    ++t->failed;
  } else {
    ++t->copied;
  }
  lf_strbuf_free(&data);
  lf_strbuf_free(&dst);
  return true;
}

static int cmd_table(ctx_t *c, args_t *a) {
  const char *dir = NULL, *v;
  int rc = 0;
  const char *sub = NULL, *arg = NULL;
  bool json = false, require_signed = false;
  while (a->i < a->argc) {
    if (take(a, "--table-dir", true, &dir, &rc))
      ;
    else if (take(a, "--json", false, &v, &rc))
      json = true;
    else if (take(a, "--require-signed", false, &v, &rc))
      require_signed = true;
    else if (!sub)
      sub = a->argv[a->i++];
    else if (!arg)
      arg = a->argv[a->i++];
    else
      return usage_error("table: unexpected argument '%s'", a->argv[a->i]);
    if (rc)
      return rc;
  }
  if (!sub || (strcmp(sub, "list") && strcmp(sub, "export") &&
               strcmp(sub, "import")))
    return usage_error("table: %s", "list, export DIR or import DIR");
  if (strcmp(sub, "list") && !arg)
    return usage_error("table %s: needs a folder", sub);
  lf_strbuf_t def;
  lf_strbuf_init(&def, 4096);
  lf_status_t s = LF_OK;
  if (!dir && !(s = lf_table_default_dir(&def)))
    dir = lf_strbuf_cstr(&def);
  if (s) {
    lf_strbuf_free(&def);
    return fail("table", s);
  }
  /* import reads the source as a table (so only valid entries pass) and
   * writes into --table-dir; list and export read --table-dir. */
  bool import = strcmp(sub, "import") == 0;
  const char *from = import ? arg : dir;
  lf_table_t *t = NULL;
  /* An import from elsewhere: with trusted keys, an entry whose signature
   * does not verify under them is forged and refused; with
   * --require-signed, so is an unsigned one. */
  s = import && (c->trusted || require_signed)
          ? lf_table_open_trusted(from, c->trusted, require_signed, &t)
          : lf_table_open(from, &t);
  if (s) {
    lf_strbuf_free(&def);
    return fail("table", s);
  }
  table_ctx_t tc = {0};
  if (strcmp(sub, "list") == 0) {
    tc.array = json ? cJSON_CreateArray() : NULL;
    if (!json)
      printf("%-16s  %-12s %-20s %-24s %s\n", "PATTERN", "CLASS", "ARCHS",
             "SIZES (*: free)", "SOURCE");
    lf_table_foreach(t, table_list_one, &tc);
    if (json) {
      char *text = cJSON_Print(tc.array);
      if (text)
        printf("%s\n", text);
      cJSON_free(text);
      cJSON_Delete(tc.array);
    }
    rc = lf_table_skipped(t) ? 1 : 0;
    if (lf_table_skipped(t))
      fprintf(stderr, PROG ": table: %zu corrupt entr%s skipped (see above)\n",
              lf_table_skipped(t), lf_table_skipped(t) == 1 ? "y" : "ies");
  } else {
    tc.dest = strcmp(sub, "export") == 0 ? arg : dir;
    tc.signer = strcmp(sub, "export") == 0 ? c->signer : NULL;
    lf_table_foreach(t, table_copy_one, &tc);
    printf("table %s: %ld entr%s copied to %s%s%s, %ld failed, %zu corrupt "
           "skipped\n",
           sub, tc.copied, tc.copied == 1 ? "y" : "ies", tc.dest,
           tc.signer ? ", signed by " : "",
           tc.signer ? lf_signer_key_id(tc.signer) : "", tc.failed,
           lf_table_skipped(t));
    rc = tc.failed || lf_table_skipped(t) ? 1 : 0;
  }
  lf_table_close(t);
  lf_strbuf_free(&def);
  return rc;
}

/* ---- main ----------------------------------------------------------------*/

typedef struct command_s {
  const char *name;
  int (*run)(ctx_t *c, args_t *a);
} command_t;

static const command_t commands[] = {
    {"list", cmd_list},     {"show", cmd_show},     {"verify", cmd_verify},
    {"export", cmd_export}, {"import", cmd_import}, {"prune", cmd_prune},
    {"remove", cmd_remove}, {"put", cmd_put},       {"keygen", cmd_keygen},
    {"push", cmd_push},     {"pull", cmd_pull},     {"sync", cmd_sync},
    {"table", cmd_table},
};

int main(int argc, char **argv) {
  lf_log_init_from_env();
  const char *dir = NULL, *api_key_env = NULL, *command = NULL;
  const char *remote = NULL, *remote_timeout = NULL, *signing_key = NULL,
             *trusted_keys = NULL;
  /* Global options may come before or after the command; the rest stay in
   * order for the command. */
  char **rest = calloc((size_t)argc + 1, sizeof(char *));
  if (!rest)
    return 1;
  int nrest = 0, rc = 0;
  args_t a = {argc, argv, 1};
  const char *v;
  while (a.i < argc) {
    if (strcmp(argv[a.i], "--help") == 0 || strcmp(argv[a.i], "-h") == 0) {
      usage(stdout);
      free(rest);
      return 0;
    }
    if (take(&a, "--cache-dir", true, &v, &rc)) {
      dir = v;
    } else if (take(&a, "--api-key-env", true, &v, &rc)) {
      api_key_env = v;
    } else if (take(&a, "--remote", true, &v, &rc)) {
      remote = v;
    } else if (take(&a, "--remote-timeout", true, &v, &rc)) {
      remote_timeout = v;
    } else if (take(&a, "--signing-key", true, &v, &rc)) {
      signing_key = v;
    } else if (take(&a, "--trusted-keys", true, &v, &rc)) {
      trusted_keys = v;
    } else if (!command && argv[a.i][0] != '-') {
      command = argv[a.i++];
    } else if (!command) {
      rc = usage_error("unknown option '%s'", argv[a.i]);
    } else {
      rest[nrest++] = argv[a.i++];
    }
    if (rc) {
      free(rest);
      return rc;
    }
  }
  if (!command) {
    usage(stderr);
    free(rest);
    return EXIT_USAGE;
  }
  const command_t *cmd = NULL;
  for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); ++i)
    if (strcmp(commands[i].name, command) == 0)
      cmd = &commands[i];
  if (!cmd) {
    free(rest);
    return usage_error("unknown command '%s'", command);
  }
  lf_strbuf_t default_dir;
  lf_strbuf_init(&default_dir, 4096);
  ctx_t c = {NULL, api_key_env, NULL, NULL, NULL};
  lf_status_t s = LF_OK;
  if (!dir && !(s = lf_cache_default_dir(&default_dir)))
    dir = lf_strbuf_cstr(&default_dir);
  const char *path = option_or_env(signing_key, LF_SIGN_KEY_ENV);
  if (!s && path)
    s = lf_status_annotate(lf_signer_load(path, &c.signer), "--signing-key");
  path = option_or_env(trusted_keys, LF_TRUSTED_KEYS_ENV);
  if (!s && path)
    s = lf_status_annotate(lf_keyring_load(path, &c.trusted),
                           "--trusted-keys");
  const char *url = option_or_env(remote, LF_REMOTE_URL_ENV);
  if (!s && url) {
    lf_remote_options_t ro;
    lf_remote_options_init(&ro);
    ro.url = url;
    if (remote_timeout) {
      char *end;
      double t = strtod(remote_timeout, &end);
      if (end == remote_timeout || *end || !(t > 0 && t <= 600))
        s = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                      "--remote-timeout '%s' is not seconds in (0, 600]",
                      remote_timeout);
      ro.timeout_ms = (long)(t * 1000);
    }
    if (!s)
      s = lf_status_annotate(lf_remote_open(&ro, &c.remote), "--remote");
  }
  if (!s)
    s = open_main_cache(&c, dir);
  if (s) {
    rc = fail(NULL, s);
  } else {
    args_t ra = {nrest, rest, 0};
    rc = cmd->run(&c, &ra);
  }
  lf_cache_close(c.cache);
  lf_remote_close(c.remote);
  lf_signer_free(c.signer);
  lf_keyring_free(c.trusted);
  lf_strbuf_free(&default_dir);
  free(rest);
  if (fflush(stdout) != 0 && rc == 0)
    rc = 1;
  return rc;
}
