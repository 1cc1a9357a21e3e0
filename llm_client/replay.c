/* replay.c - reading and writing recorded exchanges (replay.h). */
#include "llm_client/replay.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/fs.h"
#include "llm_client/datadir.h"

#ifndef LF_REPLAY_DIR
#define LF_REPLAY_DIR "kernels/replay"
#endif

lf_status_t lf_replay_default_dir(lf_strbuf_t *out) {
  return lf_llm_data_dir("LLM_FUSE_REPLAY_DIR", "replay", LF_REPLAY_DIR, out);
}

static bool all_of(const char *s, size_t min, size_t max, const char *extra,
                   bool hex_only) {
  size_t n = s ? strlen(s) : 0;
  if (n < min || n > max)
    return false;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = (unsigned char)s[i];
    bool ok = hex_only ? (isdigit(c) || (c >= 'a' && c <= 'f'))
                       : (isdigit(c) || (c >= 'a' && c <= 'z') ||
                          (extra && strchr(extra, c)));
    if (!ok)
      return false;
  }
  return true;
}

static lf_status_t check_key(const lf_replay_key_t *key) {
  if (!key || !all_of(key->fingerprint, 64, 64, NULL, true))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "replay key: fingerprint must be 64 lower-case hex");
  if (strncmp(key->arch ? key->arch : "", "sm_", 3) != 0 ||
      !all_of(key->arch + 3, 2, 4, NULL, false) ||
      !isdigit((unsigned char)key->arch[3]))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "replay key: arch '%.32s' is not sm_<digits>[a|f]",
                     key->arch ? key->arch : "");
  if (!all_of(key->prompt, 1, 32, NULL, false))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "replay key: prompt version must be [a-z0-9]{1,32}");
  if (key->attempt < 1 || key->attempt > 999)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "replay key: attempt %d out of 1..999", key->attempt);
  return LF_OK;
}

lf_status_t lf_replay_entry_path(const char *dir, const lf_replay_key_t *key,
                                 lf_strbuf_t *out) {
  LF_RETURN_IF_ERROR(check_key(key));
  return lf_strbuf_appendf(out, "%s/%s.%s.%s.%d.json", dir, key->fingerprint,
                           key->arch, key->prompt, key->attempt);
}

void lf_replay_entry_free(lf_replay_entry_t *e) {
  if (!e)
    return;
  free(e->path), free(e->reply), free(e->provider), free(e->model);
  free(e->request_sha256), free(e->finish_reason);
  free(e);
}

static char *dup_string(const cJSON *obj, const char *name) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);
  return cJSON_IsString(item) && item->valuestring ? strdup(item->valuestring)
                                                   : NULL;
}

static bool string_is(const cJSON *obj, const char *name, const char *want) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);
  return cJSON_IsString(item) && strcmp(item->valuestring, want) == 0;
}

/* Reads the reply a shipped entry points at, checking its digest. */
static lf_status_t read_reply_file(const char *dir, const char *origin,
                                   const cJSON *root, char **out_reply) {
  const char *rel = NULL, *want = NULL;
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "reply_file");
  const cJSON *h = cJSON_GetObjectItemCaseSensitive(root, "reply_sha256");
  if (cJSON_IsString(f))
    rel = f->valuestring;
  if (cJSON_IsString(h))
    want = h->valuestring;
  if (!rel || !want || rel[0] == '/' || !rel[0])
    return LF_STATUS(LF_STATUS_DATA_LOSS,
                     "%s: needs \"reply\", or a relative \"reply_file\" with "
                     "\"reply_sha256\"",
                     origin);
  lf_strbuf_t path, text;
  lf_strbuf_init(&path, 8192);
  lf_strbuf_init(&text, LF_REPLAY_MAX_FILE);
  lf_status_t s = lf_strbuf_appendf(&path, "%s/%s", dir, rel);
  if (!s)
    s = lf_read_file(lf_strbuf_cstr(&path), &text);
  char hex[LF_SHA256_HEX_SIZE] = "";
  if (!s)
    s = lf_sha256_hex(text.data ? text.data : "", lf_strbuf_len(&text), hex);
  if (s) {
    s = LF_STATUS(LF_STATUS_DATA_LOSS, "%s: reply file %s: %s", origin,
                  lf_strbuf_cstr(&path), lf_status_message(s));
  } else if (strcmp(hex, want) != 0) {
    s = LF_STATUS(LF_STATUS_DATA_LOSS,
                  "%s: reply file %s changed since the entry was generated "
                  "(rerun kernels/replay/gen_replay.py)",
                  origin, lf_strbuf_cstr(&path));
  } else {
    *out_reply = lf_strbuf_take(&text);
    if (!*out_reply)
      s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  lf_strbuf_free(&text);
  lf_strbuf_free(&path);
  return s;
}

lf_status_t lf_replay_lookup(const char *dir, const lf_replay_key_t *key,
                             const char *request_sha256,
                             lf_replay_entry_t **out_entry) {
  *out_entry = NULL;
  lf_strbuf_t path, text;
  lf_strbuf_init(&path, 8192);
  lf_strbuf_init(&text, LF_REPLAY_MAX_FILE);
  cJSON *root = NULL;
  lf_replay_entry_t *e = NULL;
  lf_status_t s = lf_replay_entry_path(dir, key, &path);
  if (s)
    goto out_free;
  const char *p = lf_strbuf_cstr(&path);
  s = lf_read_file(p, &text);
  if (s) {
    lf_status_code_t code = lf_status_code(s);
    lf_status_free(s);
    s = code == LF_STATUS_NOT_FOUND
            ? LF_STATUS(LF_STATUS_NOT_FOUND, "no recorded exchange %s", p)
            : LF_STATUS(LF_STATUS_DATA_LOSS,
                        "recorded exchange %s is unreadable or larger than "
                        "%zu bytes",
                        p, LF_REPLAY_MAX_FILE);
    goto out_free;
  }
  root =
      cJSON_ParseWithLength(text.data ? text.data : "", lf_strbuf_len(&text));
  char attempt[16];
  snprintf(attempt, sizeof(attempt), "%d", key->attempt);
  const cJSON *att = cJSON_GetObjectItemCaseSensitive(root, "attempt");
  if (!cJSON_IsObject(root) || !string_is(root, "schema", LF_REPLAY_SCHEMA) ||
      !string_is(root, "fingerprint", key->fingerprint) ||
      !string_is(root, "arch", key->arch) ||
      !string_is(root, "prompt", key->prompt) || !cJSON_IsNumber(att) ||
      att->valuedouble != (double)key->attempt) {
    s = LF_STATUS(LF_STATUS_DATA_LOSS,
                  "recorded exchange %s is not a %s entry for its own key", p,
                  LF_REPLAY_SCHEMA);
    goto out_free;
  }
  e = calloc(1, sizeof(*e));
  if (!e || !(e->path = strdup(p))) {
    s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    goto out_free;
  }
  e->reply = dup_string(root, "reply");
  if (!e->reply) {
    s = read_reply_file(dir, p, root, &e->reply);
    if (s)
      goto out_free;
  }
  e->provider = dup_string(root, "provider");
  e->model = dup_string(root, "model");
  e->request_sha256 = dup_string(root, "request_sha256");
  e->finish_reason = dup_string(root, "finish_reason");
  if (!e->provider || !e->model) {
    s = LF_STATUS(LF_STATUS_DATA_LOSS,
                  "recorded exchange %s lacks \"provider\" or \"model\"", p);
    goto out_free;
  }
  const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
  const cJSON *pt = cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens");
  const cJSON *ct =
      cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens");
  if (cJSON_IsNumber(pt) && cJSON_IsNumber(ct)) {
    e->usage.present = true;
    e->usage.prompt_tokens = (long)pt->valuedouble;
    e->usage.completion_tokens = (long)ct->valuedouble;
  }
  if (request_sha256 && e->request_sha256 &&
      strcmp(request_sha256, e->request_sha256) != 0) {
    s = LF_STATUS(LF_STATUS_FAILED_PRECONDITION,
                  "recorded exchange %s was made for another request (the "
                  "prompt changed; strict replay refuses it)",
                  p);
    goto out_free;
  }
  *out_entry = e;
  e = NULL;
out_free:
  lf_replay_entry_free(e);
  cJSON_Delete(root);
  lf_strbuf_free(&text);
  lf_strbuf_free(&path);
  return s;
}

lf_status_t lf_replay_request_sha256(const char *model,
                                     const lf_llm_message_t *messages,
                                     size_t count,
                                     char out_hex[LF_SHA256_HEX_SIZE]) {
  lf_strbuf_t text;
  lf_strbuf_init(&text, (size_t)64 << 20);
  const char *m = model ? model : "";
  lf_status_t s = lf_strbuf_appendf(&text, "llm-fuse-request/1\nmodel=%zu:%s\n",
                                    strlen(m), m);
  for (size_t i = 0; i < count && !s; ++i) {
    const char *role = messages[i].role ? messages[i].role : "";
    const char *content = messages[i].content ? messages[i].content : "";
    s = lf_strbuf_appendf(&text, "role=%zu:%s\ncontent=%zu:", strlen(role),
                          role, strlen(content));
    if (!s)
      s = lf_strbuf_append(&text, content, strlen(content));
    if (!s)
      s = lf_strbuf_append_str(&text, "\n");
  }
  if (!s)
    s = lf_sha256_hex(text.data, lf_strbuf_len(&text), out_hex);
  lf_strbuf_free(&text);
  return s;
}

/* mkdir -p. */
static lf_status_t make_dirs(const char *dir) {
  char path[4096];
  if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "path too long: %.64s...",
                     dir);
  for (char *p = path + 1; *p; ++p) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
      return LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot create %s: %s", path,
                       strerror(errno));
    *p = '/';
  }
  if (mkdir(path, 0777) != 0 && errno != EEXIST)
    return LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot create %s: %s", path,
                     strerror(errno));
  return LF_OK;
}

lf_status_t lf_replay_write(const char *dir, const lf_replay_key_t *key,
                            const lf_replay_record_t *r) {
  if (!dir || !r || !r->provider || !r->model || !r->reply ||
      (r->message_count && !r->messages))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "a recorded exchange needs a folder, provider, model and "
                     "reply");
  char hex[LF_SHA256_HEX_SIZE];
  LF_RETURN_IF_ERROR(check_key(key));
  LF_RETURN_IF_ERROR(
      lf_replay_request_sha256(r->model, r->messages, r->message_count, hex));
  LF_RETURN_IF_ERROR(make_dirs(dir));
  lf_strbuf_t path;
  lf_strbuf_init(&path, 8192);
  char *text = NULL;
  lf_status_t s = lf_replay_entry_path(dir, key, &path);
  cJSON *root = cJSON_CreateObject();
  cJSON *request = NULL, *messages = NULL, *usage = NULL;
  bool ok = root != NULL;
  ok = ok && cJSON_AddStringToObject(root, "schema", LF_REPLAY_SCHEMA);
  ok = ok && cJSON_AddStringToObject(root, "fingerprint", key->fingerprint);
  ok = ok && cJSON_AddStringToObject(root, "arch", key->arch);
  ok = ok && cJSON_AddStringToObject(root, "prompt", key->prompt);
  ok = ok && cJSON_AddNumberToObject(root, "attempt", key->attempt);
  ok = ok && cJSON_AddStringToObject(root, "provider", r->provider);
  ok = ok && cJSON_AddStringToObject(root, "model", r->model);
  ok = ok && cJSON_AddStringToObject(root, "prompt_version",
                                     r->prompt_version ? r->prompt_version
                                                       : key->prompt);
  time_t now = time(NULL);
  struct tm tm;
  char stamp[32] = "";
  if (gmtime_r(&now, &tm))
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
  ok = ok && cJSON_AddStringToObject(root, "recorded", stamp);
  ok = ok && cJSON_AddStringToObject(root, "request_sha256", hex);
  ok = ok && (request = cJSON_AddObjectToObject(root, "request"));
  ok = ok && cJSON_AddStringToObject(request, "model", r->model);
  ok = ok && (messages = cJSON_AddArrayToObject(request, "messages"));
  for (size_t i = 0; ok && i < r->message_count; ++i) {
    cJSON *m = cJSON_CreateObject();
    ok = m && cJSON_AddItemToArray(messages, m);
    ok = ok && cJSON_AddStringToObject(
                   m, "role", r->messages[i].role ? r->messages[i].role : "");
    ok = ok && cJSON_AddStringToObject(
                   m, "content",
                   r->messages[i].content ? r->messages[i].content : "");
  }
  ok = ok && cJSON_AddStringToObject(root, "reply", r->reply);
  if (ok && r->finish_reason)
    ok = cJSON_AddStringToObject(root, "finish_reason", r->finish_reason);
  if (ok && r->usage.present) {
    ok = (usage = cJSON_AddObjectToObject(root, "usage")) != NULL;
    ok = ok && cJSON_AddNumberToObject(usage, "prompt_tokens",
                                       (double)r->usage.prompt_tokens);
    ok = ok && cJSON_AddNumberToObject(usage, "completion_tokens",
                                       (double)r->usage.completion_tokens);
  }
  ok = ok && (text = cJSON_Print(root));
  if (!s && !ok)
    s = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED,
                  "out of memory building a recorded exchange");
  if (!s) {
    size_t n = strlen(text);
    text[n] = '\0';
    lf_strbuf_t out;
    lf_strbuf_init(&out, n + 2);
    s = lf_strbuf_append(&out, text, n);
    if (!s)
      s = lf_strbuf_append_str(&out, "\n");
    if (!s)
      s = lf_write_file_atomic(lf_strbuf_cstr(&path), out.data, out.len);
    lf_strbuf_free(&out);
  }
  cJSON_free(text);
  cJSON_Delete(root);
  lf_strbuf_free(&path);
  return s;
}
