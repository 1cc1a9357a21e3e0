/* cache.c - the content-addressed kernel cache: keys, entry files, walks.
 *
 * An entry file is the unformatted cJSON print of a tree built in one fixed
 * member order, plus "\n". Its checksum is the SHA-256 of that print
 * without the checksum member. Reading is the writer run backwards and
 * compared: parse, check every member's name, order and type, recompute
 * the checksum, rebuild the entry's bytes from what was read and require
 * them to equal the file. So every byte of a trusted file is accounted for.
 * cJSON NULLs become statuses here and nowhere else.
 */
#include "llm_client/cache.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/fs.h"
#include "base/log.h"

#define KEY_SCHEMA "llm-fuse-cache-key/1"
#define KEY_FIELD_MAX 1024
#define CHECKSUM_PREFIX "sha256:"
#define MAX_ATTEMPTS 1000000
#define MAX_CREATED 253402300799LL /* 9999-12-31T23:59:59Z */
#define PATH_MAX_BYTES 4096
#define SIGNATURE_SCHEMA "llm-fuse-cache-signature/1"
#define SIGNATURE_ALG "ed25519"
#define MAX_REJECTIONS 64

struct lf_cache_s {
  char *dir;
  char *secret_env; /* name of the key's variable; NULL: no guard */
  char *secret;     /* its value when long enough; wiped on close */
  const lf_signer_t *signer;
  const lf_keyring_t *trusted;
  bool require_signed;
  lf_remote_t *remote;
  bool push;
  pthread_mutex_t lock; /* the remote counters and rejections */
  lf_cache_rejection_t rejections[MAX_REJECTIONS];
  size_t num_rejections, total_rejections;
  lf_cache_remote_counts_t counts;
  bool down_logged; /* "the store is down" is said once */
};

/* ---- Small helpers -------------------------------------------------------*/

static lf_status_t oom(void) {
  return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
}

/* A DATA_LOSS status "<origin>: <what>". */
static lf_status_t corrupt(const char *origin, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static lf_status_t corrupt(const char *origin, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  return LF_STATUS(LF_STATUS_DATA_LOSS, "%s: %s",
                   origin ? origin : "cache entry", what);
}

static char *dup_or_null(const char *s, bool *failed) {
  if (!s)
    return NULL;
  char *d = strdup(s);
  if (!d)
    *failed = true;
  return d;
}

/* Copies at most `max` bytes of `s` into `out` for a message, replacing
 * anything unprintable with '?' so hostile text cannot forge log lines. */
static const char *quote(const char *s, char *out, size_t size) {
  size_t i = 0;
  for (; s && s[i] && i + 4 < size; ++i)
    out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
  if (s && s[i] && i + 4 >= size && size >= 4) {
    memcpy(out + i, "...", 3);
    i += 3;
  }
  out[i] = '\0';
  return out;
}

/* ---- Keys ----------------------------------------------------------------*/

typedef struct key_field_s {
  const char *name;
  size_t offset;
  bool optional; /* absent when NULL or "": not in the digest or the entry */
} key_field_t;

static const key_field_t key_fields[] = {
    {"fingerprint", offsetof(lf_cache_key_t, fingerprint), false},
    {"arch", offsetof(lf_cache_key_t, arch), false},
    {"toolchain", offsetof(lf_cache_key_t, toolchain), false},
    {"provider", offsetof(lf_cache_key_t, provider), false},
    {"model", offsetof(lf_cache_key_t, model), false},
    {"prompt_version", offsetof(lf_cache_key_t, prompt_version), false},
    {"precision", offsetof(lf_cache_key_t, precision), true},
};

/* The precision modes a key may name (besides none). */
static const char *const key_precisions[] = {"tf32", NULL};
#define KEY_FIELD_COUNT (sizeof(key_fields) / sizeof(key_fields[0]))

static const char *key_get(const lf_cache_key_t *key, size_t i) {
  return *(const char *const *)((const char *)key + key_fields[i].offset);
}

/* Whether field i is present (an optional field that is NULL or "" is
 * not). */
static bool key_has(const lf_cache_key_t *key, size_t i) {
  const char *v = key_get(key, i);
  return !key_fields[i].optional || (v && *v);
}

static void key_set(lf_cache_key_t *key, size_t i, const char *value) {
  *(const char **)((char *)key + key_fields[i].offset) = value;
}

static bool valid_arch(const char *s) {
  if (strncmp(s, "sm_", 3) != 0)
    return false;
  size_t digits = 0;
  const char *p = s + 3;
  while (*p >= '0' && *p <= '9')
    ++p, ++digits;
  if (*p == 'a' || *p == 'f')
    ++p;
  return digits >= 1 && digits <= 4 && *p == '\0';
}

/* A printable text field: non-empty, at most `max` bytes, no control
 * characters. */
static bool valid_text(const char *s, size_t max) {
  size_t n = 0;
  for (; s[n]; ++n)
    if (n >= max || (unsigned char)s[n] < 0x20 || s[n] == 0x7f)
      return false;
  return n > 0;
}

lf_status_t lf_cache_key_validate(const lf_cache_key_t *key) {
  if (!key)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "cache key is NULL");
  char q[80];
  for (size_t i = 0; i < KEY_FIELD_COUNT; ++i) {
    const char *v = key_get(key, i);
    if (!key_has(key, i))
      continue;
    if (!v || !*v)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "cache key field '%s' is missing", key_fields[i].name);
    if (!valid_text(v, KEY_FIELD_MAX))
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "cache key field '%s' holds control characters or is "
                       "longer than %d bytes",
                       key_fields[i].name, KEY_FIELD_MAX);
  }
  if (!lf_sha256_is_hex(key->fingerprint))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "cache key fingerprint '%s' is not 64 lower-case hex "
                     "digits",
                     quote(key->fingerprint, q, sizeof(q)));
  if (key->precision && *key->precision) {
    bool known = false;
    for (const char *const *p = key_precisions; *p && !known; ++p)
      known = strcmp(*p, key->precision) == 0;
    if (!known)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "cache key precision '%s' is not tf32 (or absent)",
                       quote(key->precision, q, sizeof(q)));
  }
  if (!valid_arch(key->arch))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "cache key arch '%s' is not of the form sm_<digits> "
                     "with an optional a or f (e.g. sm_90a)",
                     quote(key->arch, q, sizeof(q)));
  return LF_OK;
}

lf_status_t lf_cache_key_digest(const lf_cache_key_t *key,
                                char out_digest[LF_SHA256_HEX_SIZE]) {
  out_digest[0] = '\0';
  LF_RETURN_IF_ERROR(lf_cache_key_validate(key));
  lf_strbuf_t buf;
  lf_strbuf_init(&buf, KEY_FIELD_COUNT * (KEY_FIELD_MAX + 64) + 64);
  lf_status_t status = lf_strbuf_append_str(&buf, KEY_SCHEMA "\n");
  for (size_t i = 0; !status && i < KEY_FIELD_COUNT; ++i) {
    const char *v = key_get(key, i);
    if (key_has(key, i))
      status = lf_strbuf_appendf(&buf, "%s=%zu:%s\n", key_fields[i].name,
                                 strlen(v), v);
  }
  if (!status)
    status = lf_sha256_hex(buf.data, buf.len, out_digest);
  lf_strbuf_free(&buf);
  return status;
}

static bool key_equal(const lf_cache_key_t *a, const lf_cache_key_t *b,
                      size_t *out_field) {
  for (size_t i = 0; i < KEY_FIELD_COUNT; ++i)
    if (strcmp(key_has(a, i) ? key_get(a, i) : "",
               key_has(b, i) ? key_get(b, i) : "") != 0) {
      *out_field = i;
      return false;
    }
  return true;
}

/* ---- Verdicts ------------------------------------------------------------*/

static const char *const verdict_names[] = {"unverified", "verified",
                                            "rejected"};

const char *lf_cache_verdict_name(lf_cache_verdict_t verdict) {
  return (unsigned)verdict < 3 ? verdict_names[verdict] : "?";
}

lf_status_t lf_cache_verdict_parse(const char *name,
                                   lf_cache_verdict_t *out_verdict) {
  for (unsigned i = 0; name && i < 3; ++i)
    if (strcmp(name, verdict_names[i]) == 0) {
      *out_verdict = (lf_cache_verdict_t)i;
      return LF_OK;
    }
  return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                   "verification status must be verified, rejected or "
                   "unverified");
}


/* ---- Time stamps: "YYYY-MM-DDTHH:MM:SSZ", UTC ----------------------------*/

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = (unsigned)(y - era * 400);
  unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  unsigned doe = (unsigned)(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static void format_time(int64_t t, char out[32]) {
  int64_t days = t / 86400, secs = t % 86400, y;
  unsigned m, d;
  civil_from_days(days, &y, &m, &d);
  /* 1970..9999 gives 20 characters; the wider buffer keeps the compiler's
   * range analysis quiet. */
  char tmp[96];
  snprintf(tmp, sizeof(tmp), "%04lld-%02u-%02uT%02d:%02d:%02dZ", (long long)y,
           m, d, (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60));
  snprintf(out, 32, "%.31s", tmp);
}

static bool parse_time(const char *s, int64_t *out) {
  static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
  int v[14], nv = 0;
  for (size_t i = 0; i < sizeof(shape) - 1; ++i) {
    if (shape[i] == 'd') {
      if (s[i] < '0' || s[i] > '9')
        return false;
      v[nv++] = s[i] - '0';
    } else if (s[i] != shape[i]) {
      return false;
    }
  }
  if (s[sizeof(shape) - 1] != '\0')
    return false;
  int year = v[0] * 1000 + v[1] * 100 + v[2] * 10 + v[3];
  unsigned mon = (unsigned)(v[4] * 10 + v[5]),
           day = (unsigned)(v[6] * 10 + v[7]);
  int hh = v[8] * 10 + v[9], mm = v[10] * 10 + v[11], ss = v[12] * 10 + v[13];
  static const unsigned mdays[] = {31, 29, 31, 30, 31, 30,
                                   31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (year < 1970 || mon < 1 || mon > 12 || day < 1 || day > mdays[mon - 1] ||
      (mon == 2 && day == 29 && !leap) || hh > 23 || mm > 59 || ss > 59)
    return false;
  *out = days_from_civil(year, mon, day) * 86400 + hh * 3600 + mm * 60 + ss;
  return true;
}

lf_status_t lf_cache_time_format(int64_t seconds, char out[32]) {
  out[0] = '\0';
  if (seconds < 0 || seconds > MAX_CREATED)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "time %lld is out of 1970..9999", (long long)seconds);
  format_time(seconds, out);
  return LF_OK;
}

lf_status_t lf_cache_time_parse(const char *text, int64_t *out_seconds) {
  if (!text || !parse_time(text, out_seconds))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "time is not a UTC time stamp YYYY-MM-DDTHH:MM:SSZ");
  return LF_OK;
}

/* ---- Building an entry's JSON --------------------------------------------*/

/* Makes the verification record: `json` (or {}) with "status" first. */
static lf_status_t build_verification(const lf_cache_entry_t *entry,
                                      cJSON **out) {
  *out = NULL;
  const char *want = lf_cache_verdict_name(entry->verdict);
  if ((unsigned)entry->verdict > LF_CACHE_REJECTED)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "cache entry verdict %d is out of range",
                     (int)entry->verdict);
  cJSON *given = NULL;
  if (entry->verification_json) {
    given = cJSON_ParseWithLength(entry->verification_json,
                                  strlen(entry->verification_json));
    if (!cJSON_IsObject(given)) {
      cJSON_Delete(given);
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "cache entry verification record is not a JSON "
                       "object");
    }
  }
  lf_status_t status = LF_OK;
  cJSON *rec = cJSON_CreateObject();
  if (!rec || !cJSON_AddStringToObject(rec, "status", want)) {
    status = oom();
    goto out_delete;
  }
  int seen_status = 0;
  while (given && given->child) {
    cJSON *item = cJSON_DetachItemViaPointer(given, given->child);
    if (item->string && strcmp(item->string, "status") == 0) {
      bool same = cJSON_IsString(item) && item->valuestring &&
                  strcmp(item->valuestring, want) == 0;
      cJSON_Delete(item);
      if (!same || ++seen_status > 1) {
        status = LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                           "cache entry verification record's \"status\" is "
                           "not \"%s\", the entry's verdict (or appears "
                           "twice)",
                           want);
        goto out_delete;
      }
      continue;
    }
    if (!item->string) {
      cJSON_Delete(item);
      continue;
    }
    char *name = item->string;
    item->string = NULL;
    bool ok = cJSON_AddItemToObject(rec, name, item);
    free(name);
    if (!ok) {
      cJSON_Delete(item);
      status = oom();
      goto out_delete;
    }
  }
  *out = rec;
  rec = NULL;
out_delete:
  cJSON_Delete(rec);
  cJSON_Delete(given);
  return status;
}

/* Builds the whole entry tree, checksum excluded, in the canonical order. */
static lf_status_t build_tree(const lf_cache_key_t *key,
                              const lf_cache_entry_t *entry, const char *digest,
                              bool zero_is_now, cJSON **out_root) {
  *out_root = NULL;
  const lf_cache_provenance_t *p = &entry->provenance;
  if (!entry->kernel || !*entry->kernel)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "cache entry has no kernel text");
  if (!entry->cubin != !entry->cubin_len)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "cache entry cubin and cubin_len disagree");
  if (p->attempts < 0 || p->attempts > MAX_ATTEMPTS)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "cache entry attempts %d is out of 0..%d", p->attempts,
                     MAX_ATTEMPTS);
  int64_t created =
      p->created || !zero_is_now ? p->created : (int64_t)time(NULL);
  if (created < 0 || created > MAX_CREATED)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "cache entry created time %lld is out of 1970..9999",
                     (long long)created);
  const char *prov[4] = {
      p->provider ? p->provider : key->provider,
      p->model ? p->model : key->model,
      p->prompt_version ? p->prompt_version : key->prompt_version,
      p->tool_version ? p->tool_version : LF_CACHE_TOOL_VERSION};
  static const char *const prov_names[4] = {"provider", "model",
                                            "prompt_version", "tool_version"};
  for (int i = 0; i < 4; ++i)
    if (!valid_text(prov[i], KEY_FIELD_MAX))
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "cache entry provenance %s is empty, too long or "
                       "holds control characters",
                       prov_names[i]);

  cJSON *verification = NULL;
  LF_RETURN_IF_ERROR(build_verification(entry, &verification));

  lf_status_t status = LF_OK;
  char *cubin64 = NULL;
  cJSON *root = cJSON_CreateObject(), *k = NULL, *pv = NULL;
  if (!root ||
      !cJSON_AddStringToObject(root, "schema", LF_CACHE_ENTRY_SCHEMA) ||
      !(k = cJSON_AddObjectToObject(root, "key")))
    goto out_oom;
  for (size_t i = 0; i < KEY_FIELD_COUNT; ++i)
    if (key_has(key, i) &&
        !cJSON_AddStringToObject(k, key_fields[i].name, key_get(key, i)))
      goto out_oom;
  if (!cJSON_AddStringToObject(root, "digest", digest) ||
      !cJSON_AddStringToObject(root, "kernel", entry->kernel))
    goto out_oom;
  if (entry->ptx && !cJSON_AddStringToObject(root, "ptx", entry->ptx))
    goto out_oom;
  if (entry->cubin) {
    cubin64 = lf_base64_encode(entry->cubin, entry->cubin_len);
    if (!cubin64 || !cJSON_AddStringToObject(root, "cubin", cubin64))
      goto out_oom;
  }
  if (!cJSON_AddItemToObject(root, "verification", verification))
    goto out_oom;
  verification = NULL;
  char when[32];
  format_time(created, when);
  if (!(pv = cJSON_AddObjectToObject(root, "provenance")))
    goto out_oom;
  for (int i = 0; i < 4; ++i)
    if (!cJSON_AddStringToObject(pv, prov_names[i], prov[i]))
      goto out_oom;
  if (!cJSON_AddStringToObject(pv, "created", when) ||
      !cJSON_AddNumberToObject(pv, "attempts", p->attempts))
    goto out_oom;
  *out_root = root;
  root = NULL;
  goto out_free;

out_oom:
  status = LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED,
                     "out of memory building a cache entry");
out_free:
  free(cubin64);
  cJSON_Delete(verification);
  cJSON_Delete(root);
  return status;
}

/* Checksum of a tree without its checksum member. */
static lf_status_t tree_checksum(const cJSON *root,
                                 char out_hex[LF_SHA256_HEX_SIZE]) {
  char *text = cJSON_PrintUnformatted(root);
  if (!text)
    return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED,
                     "out of memory printing a cache entry");
  lf_status_t status = lf_sha256_hex(text, strlen(text), out_hex);
  cJSON_free(text);
  return status;
}

lf_status_t lf_cache_signed_message(const char *digest, const char *checksum,
                                    char out[LF_CACHE_SIGNED_MESSAGE_SIZE],
                                    size_t *out_len) {
  if (!lf_sha256_is_hex(digest) || !lf_sha256_is_hex(checksum))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "a signed message needs a digest and a checksum of 64 "
                     "hex digits");
  int n = snprintf(out, LF_CACHE_SIGNED_MESSAGE_SIZE,
                   SIGNATURE_SCHEMA "\n%s\n" CHECKSUM_PREFIX "%s\n", digest,
                   checksum);
  if (n <= 0 || n >= LF_CACHE_SIGNED_MESSAGE_SIZE)
    return LF_STATUS(LF_STATUS_INTERNAL, "signed message overflow");
  *out_len = (size_t)n;
  return LF_OK;
}

/* Adds the "signature" member: made by `signer` (when non-NULL) or copied
 * from `keep` (when it has a key id). */
static lf_status_t add_signature(cJSON *root, const char *digest,
                                 const char *sum, const lf_signer_t *signer,
                                 const lf_cache_signature_t *keep) {
  lf_cache_signature_t made;
  const lf_cache_signature_t *sig = keep;
  if (signer) {
    char msg[LF_CACHE_SIGNED_MESSAGE_SIZE];
    size_t n = 0;
    LF_RETURN_IF_ERROR(lf_cache_signed_message(digest, sum, msg, &n));
    LF_RETURN_IF_ERROR(lf_signer_sign(signer, msg, n, made.value));
    snprintf(made.key_id, sizeof(made.key_id), "%s",
             lf_signer_key_id(signer));
    sig = &made;
  }
  if (!sig || !sig->key_id[0])
    return LF_OK;
  char *value = lf_base64_encode(sig->value, LF_SIGN_BYTES);
  cJSON *o = value ? cJSON_AddObjectToObject(root, "signature") : NULL;
  bool ok = o && cJSON_AddStringToObject(o, "alg", SIGNATURE_ALG) &&
            cJSON_AddStringToObject(o, "key", sig->key_id) &&
            cJSON_AddStringToObject(o, "value", value);
  free(value);
  return ok ? LF_OK : oom();
}

/* lf_cache_entry_serialize; `zero_is_now` false keeps created == 0 as the
 * epoch, which re-serializing a read entry needs. The entry is signed by
 * `signer` when non-NULL, else carries `keep` when that has a key id. */
static lf_status_t serialize(const lf_cache_key_t *key,
                             const lf_cache_entry_t *entry, bool zero_is_now,
                             const lf_signer_t *signer,
                             const lf_cache_signature_t *keep,
                             char **out_text, size_t *out_len) {
  *out_text = NULL;
  *out_len = 0;
  if (!entry)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "cache entry is NULL");
  char digest[LF_SHA256_HEX_SIZE], sum[LF_SHA256_HEX_SIZE];
  char checksum[sizeof(CHECKSUM_PREFIX) + LF_SHA256_HEX_SIZE];
  LF_RETURN_IF_ERROR(lf_cache_key_digest(key, digest));
  cJSON *root = NULL;
  LF_RETURN_IF_ERROR(build_tree(key, entry, digest, zero_is_now, &root));
  lf_status_t status = tree_checksum(root, sum);
  if (status)
    goto out_delete;
  snprintf(checksum, sizeof(checksum), CHECKSUM_PREFIX "%s", sum);
  if (!cJSON_AddStringToObject(root, "checksum", checksum)) {
    status = oom();
    goto out_delete;
  }
  status = add_signature(root, digest, sum, signer, keep);
  if (status)
    goto out_delete;
  char *text = cJSON_PrintUnformatted(root);
  size_t n = text ? strlen(text) : 0;
  char *out = text ? malloc(n + 2) : NULL;
  if (!out) {
    cJSON_free(text);
    status = oom();
    goto out_delete;
  }
  memcpy(out, text, n);
  out[n] = '\n';
  out[n + 1] = '\0';
  cJSON_free(text);
  *out_text = out;
  *out_len = n + 1;
out_delete:
  cJSON_Delete(root);
  return status;
}

lf_status_t lf_cache_entry_serialize(const lf_cache_key_t *key,
                                     const lf_cache_entry_t *entry,
                                     char **out_text, size_t *out_len) {
  return serialize(key, entry, true, NULL, &entry->signature, out_text,
                   out_len);
}

/* ---- Reading an entry ----------------------------------------------------*/

void lf_cache_entry_free(lf_cache_entry_t *entry) {
  if (!entry)
    return;
  for (size_t i = 0; i < KEY_FIELD_COUNT; ++i)
    free((void *)key_get(&entry->key, i));
  free(entry->kernel);
  free(entry->ptx);
  free(entry->cubin);
  free(entry->verification_json);
  free((void *)entry->provenance.provider);
  free((void *)entry->provenance.model);
  free((void *)entry->provenance.prompt_version);
  free((void *)entry->provenance.tool_version);
  free(entry);
}

typedef enum { T_STRING, T_OBJECT, T_NUMBER } member_type_t;

typedef struct member_spec_s {
  const char *name;
  member_type_t type;
  bool optional;
} member_spec_t;

static const char *type_name(member_type_t t) {
  return t == T_STRING ? "a string" : t == T_OBJECT ? "an object" : "a number";
}

static bool has_type(const cJSON *item, member_type_t t) {
  switch (t) {
  case T_STRING:
    return cJSON_IsString(item) && item->valuestring;
  case T_OBJECT:
    return cJSON_IsObject(item);
  case T_NUMBER:
    return cJSON_IsNumber(item);
  }
  return false;
}

/* Requires `obj`'s members to be exactly `spec` in order (optional ones may
 * be absent) and of the listed types; fills out[i] (NULL when absent). */
static lf_status_t check_members(const cJSON *obj, const member_spec_t *spec,
                                 size_t count, const char *where,
                                 const char *origin, const cJSON **out) {
  size_t s = 0;
  char q[64];
  for (size_t i = 0; i < count; ++i)
    out[i] = NULL;
  for (const cJSON *m = obj->child; m; m = m->next) {
    const char *name = m->string ? m->string : "";
    while (s < count && spec[s].optional && strcmp(spec[s].name, name) != 0)
      ++s;
    if (s >= count || strcmp(spec[s].name, name) != 0) {
      for (size_t j = 0; j < count; ++j)
        if (strcmp(spec[j].name, name) == 0)
          return corrupt(origin, "%s member '%s' is repeated or out of order",
                         where, name);
      return corrupt(origin, "%s has an unexpected member '%s'", where,
                     quote(name, q, sizeof(q)));
    }
    if (!has_type(m, spec[s].type))
      return corrupt(origin, "%s member '%s' is not %s", where, name,
                     type_name(spec[s].type));
    out[s++] = m;
  }
  for (size_t j = 0; j < count; ++j)
    if (!out[j] && !spec[j].optional)
      return corrupt(origin, "%s has no member '%s'", where, spec[j].name);
  return LF_OK;
}

enum {
  TOP_SCHEMA,
  TOP_KEY,
  TOP_DIGEST,
  TOP_KERNEL,
  TOP_PTX,
  TOP_CUBIN,
  TOP_VERIFICATION,
  TOP_PROVENANCE,
  TOP_CHECKSUM,
  TOP_SIGNATURE,
  TOP_COUNT
};
static const member_spec_t top_spec[TOP_COUNT] = {
    {"schema", T_STRING, false},       {"key", T_OBJECT, false},
    {"digest", T_STRING, false},       {"kernel", T_STRING, false},
    {"ptx", T_STRING, true},           {"cubin", T_STRING, true},
    {"verification", T_OBJECT, false}, {"provenance", T_OBJECT, false},
    {"checksum", T_STRING, false},     {"signature", T_OBJECT, true},
};

enum { SG_ALG, SG_KEY, SG_VALUE, SG_COUNT };
static const member_spec_t sig_spec[SG_COUNT] = {
    {"alg", T_STRING, false},
    {"key", T_STRING, false},
    {"value", T_STRING, false},
};

/* Reads the "signature" member's shape (not whether it verifies). */
static lf_status_t extract_signature(const cJSON *obj, const char *origin,
                                     lf_cache_signature_t *out) {
  const cJSON *m[SG_COUNT];
  LF_RETURN_IF_ERROR(
      check_members(obj, sig_spec, SG_COUNT, "signature", origin, m));
  char q[80];
  if (strcmp(m[SG_ALG]->valuestring, SIGNATURE_ALG) != 0)
    return corrupt(origin, "signature alg '%s' is not '" SIGNATURE_ALG "'",
                   quote(m[SG_ALG]->valuestring, q, sizeof(q)));
  const char *id = m[SG_KEY]->valuestring;
  size_t n = strlen(id);
  bool hex = n == LF_SIGN_KEY_ID_SIZE - 1;
  for (size_t i = 0; hex && i < n; ++i)
    hex = (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f');
  if (!hex)
    return corrupt(origin, "signature key '%s' is not 16 lower-case hex "
                           "digits",
                   quote(id, q, sizeof(q)));
  unsigned char *value = NULL;
  size_t vlen = 0;
  bool failed = false;
  if (!lf_base64_decode(m[SG_VALUE]->valuestring, &value, &vlen, &failed) ||
      vlen != LF_SIGN_BYTES) {
    free(value);
    return failed ? oom()
                  : corrupt(origin, "signature value is not canonical "
                                    "base64 of %d bytes",
                            LF_SIGN_BYTES);
  }
  memcpy(out->key_id, id, LF_SIGN_KEY_ID_SIZE);
  memcpy(out->value, value, LF_SIGN_BYTES);
  free(value);
  return LF_OK;
}

enum {
  PV_PROVIDER,
  PV_MODEL,
  PV_PROMPT,
  PV_TOOL,
  PV_CREATED,
  PV_ATTEMPTS,
  PV_COUNT
};
static const member_spec_t prov_spec[PV_COUNT] = {
    {"provider", T_STRING, false},       {"model", T_STRING, false},
    {"prompt_version", T_STRING, false}, {"tool_version", T_STRING, false},
    {"created", T_STRING, false},        {"attempts", T_NUMBER, false},
};

/* Fills `e` (zeroed, heap) from a structurally checked tree. */
static lf_status_t extract_entry(const cJSON *const *top, const char *origin,
                                 lf_cache_entry_t *e) {
  char q[80];
  bool failed = false;
  /* Key. */
  member_spec_t key_spec[KEY_FIELD_COUNT];
  const cJSON *kv[KEY_FIELD_COUNT];
  for (size_t i = 0; i < KEY_FIELD_COUNT; ++i)
    key_spec[i] = (member_spec_t){key_fields[i].name, T_STRING,
                                  key_fields[i].optional};
  LF_RETURN_IF_ERROR(check_members(top[TOP_KEY], key_spec, KEY_FIELD_COUNT,
                                   "key", origin, kv));
  for (size_t i = 0; i < KEY_FIELD_COUNT; ++i) {
    if (!kv[i])
      continue; /* an optional field, absent */
    if (key_fields[i].optional && !*kv[i]->valuestring)
      return corrupt(origin, "key member '%s' is empty (absent is written "
                             "as no member)",
                     key_fields[i].name);
    key_set(&e->key, i, dup_or_null(kv[i]->valuestring, &failed));
  }
  if (failed)
    return oom();
  char digest[LF_SHA256_HEX_SIZE];
  lf_status_t s = lf_cache_key_digest(&e->key, digest);
  if (s) {
    lf_status_t c = corrupt(origin, "invalid key: %s", lf_status_message(s));
    lf_status_free(s);
    return c;
  }
  if (strcmp(digest, top[TOP_DIGEST]->valuestring) != 0)
    return corrupt(origin,
                   "digest '%s' is not the digest of the entry's key (%s)",
                   quote(top[TOP_DIGEST]->valuestring, q, sizeof(q)), digest);
  memcpy(e->digest, digest, sizeof(digest));

  /* Payload. */
  if (!*top[TOP_KERNEL]->valuestring)
    return corrupt(origin, "kernel text is empty");
  e->kernel = dup_or_null(top[TOP_KERNEL]->valuestring, &failed);
  if (top[TOP_PTX])
    e->ptx = dup_or_null(top[TOP_PTX]->valuestring, &failed);
  if (failed)
    return oom();
  if (top[TOP_CUBIN] && !lf_base64_decode(top[TOP_CUBIN]->valuestring, &e->cubin,
                                    &e->cubin_len, &failed))
    return failed ? oom() : corrupt(origin, "cubin is not canonical base64");

  /* Verification record. */
  const cJSON *vstat = NULL;
  int nstat = 0;
  for (const cJSON *m = top[TOP_VERIFICATION]->child; m; m = m->next) {
    if (m->string && strcmp(m->string, "status") == 0) {
      if (!vstat)
        vstat = m;
      ++nstat;
    }
  }
  if (nstat != 1 || !cJSON_IsString(vstat) || !vstat->valuestring)
    return corrupt(origin, "verification record has %s \"status\" string",
                   nstat > 1 ? "more than one" : "no");
  s = lf_cache_verdict_parse(vstat->valuestring, &e->verdict);
  if (s) {
    lf_status_free(s);
    return corrupt(origin,
                   "verification status '%s' is not verified, "
                   "rejected or unverified",
                   quote(vstat->valuestring, q, sizeof(q)));
  }
  e->verification_json = cJSON_PrintUnformatted(top[TOP_VERIFICATION]);
  if (!e->verification_json)
    return oom();

  /* Provenance. */
  const cJSON *pv[PV_COUNT];
  LF_RETURN_IF_ERROR(check_members(top[TOP_PROVENANCE], prov_spec, PV_COUNT,
                                   "provenance", origin, pv));
  for (int i = PV_PROVIDER; i <= PV_TOOL; ++i)
    if (!valid_text(pv[i]->valuestring, KEY_FIELD_MAX))
      return corrupt(origin,
                     "provenance %s is empty, too long or holds "
                     "control characters",
                     prov_spec[i].name);
  lf_cache_provenance_t *p = &e->provenance;
  p->provider = dup_or_null(pv[PV_PROVIDER]->valuestring, &failed);
  p->model = dup_or_null(pv[PV_MODEL]->valuestring, &failed);
  p->prompt_version = dup_or_null(pv[PV_PROMPT]->valuestring, &failed);
  p->tool_version = dup_or_null(pv[PV_TOOL]->valuestring, &failed);
  if (failed)
    return oom();
  if (!parse_time(pv[PV_CREATED]->valuestring, &p->created))
    return corrupt(origin,
                   "provenance created '%s' is not a UTC time "
                   "YYYY-MM-DDTHH:MM:SSZ",
                   quote(pv[PV_CREATED]->valuestring, q, sizeof(q)));
  double a = pv[PV_ATTEMPTS]->valuedouble;
  if (!(a >= 0 && a <= MAX_ATTEMPTS) || a != floor(a))
    return corrupt(origin, "provenance attempts is not an integer in 0..%d",
                   MAX_ATTEMPTS);
  p->attempts = (int)a;
  return LF_OK;
}

lf_status_t lf_cache_entry_parse(const char *data, size_t len,
                                 const lf_cache_key_t *expect,
                                 const char *origin,
                                 lf_cache_entry_t **out_entry) {
  *out_entry = NULL;
  char q[80];
  if (expect)
    LF_RETURN_IF_ERROR(lf_cache_key_validate(expect));
  if (len > LF_CACHE_MAX_ENTRY_BYTES)
    return corrupt(origin,
                   "%zu bytes, more than the %zu MiB an entry may "
                   "have",
                   len, LF_CACHE_MAX_ENTRY_BYTES >> 20);
  if (len == 0 || !data)
    return corrupt(origin, "empty file");
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(data, len, &end, false);
  if (!root) {
    size_t at =
        end && end >= data && end <= data + len ? (size_t)(end - data) : 0;
    /* Entry files end in a newline; without one the file was cut short. */
    return corrupt(origin, "not JSON (parse error at byte %zu of %zu%s)", at,
                   len, data[len - 1] != '\n' ? ": truncated?" : "");
  }
  lf_status_t status = LF_OK;
  lf_cache_entry_t *e = NULL;
  char *text = NULL;
  size_t text_len = 0;
  if (!cJSON_IsObject(root)) {
    status = corrupt(origin, "not a JSON object");
    goto out_delete;
  }
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
  if (!cJSON_IsString(schema) || !schema->valuestring ||
      strcmp(schema->valuestring, LF_CACHE_ENTRY_SCHEMA) != 0) {
    status = corrupt(
        origin, "schema is %s%s%s, not '" LF_CACHE_ENTRY_SCHEMA "'",
        cJSON_IsString(schema) ? "'" : "",
        cJSON_IsString(schema) ? quote(schema->valuestring, q, sizeof(q))
                               : "missing or not a string",
        cJSON_IsString(schema) ? "'" : "");
    goto out_delete;
  }
  const cJSON *top[TOP_COUNT];
  status = check_members(root, top_spec, TOP_COUNT, "entry", origin, top);
  if (status)
    goto out_delete;
  e = calloc(1, sizeof(*e));
  if (!e) {
    status = oom();
    goto out_delete;
  }
  status = extract_entry(top, origin, e);
  if (status)
    goto out_delete;

  if (top[TOP_SIGNATURE]) {
    status = extract_signature(top[TOP_SIGNATURE], origin, &e->signature);
    if (status)
      goto out_delete;
  }

  /* Checksum, over the tree as read, without its checksum and signature
   * members. */
  const char *stored = top[TOP_CHECKSUM]->valuestring;
  char sum[LF_SHA256_HEX_SIZE];
  cJSON *sum_item =
      cJSON_DetachItemViaPointer(root, (cJSON *)top[TOP_CHECKSUM]);
  cJSON *sig_item =
      top[TOP_SIGNATURE]
          ? cJSON_DetachItemViaPointer(root, (cJSON *)top[TOP_SIGNATURE])
          : NULL;
  status = tree_checksum(root, sum);
  cJSON_AddItemToObject(root, "checksum", sum_item); /* for the delete */
  if (sig_item)
    cJSON_AddItemToObject(root, "signature", sig_item);
  if (status)
    goto out_delete;
  memcpy(e->checksum, sum, sizeof(sum));
  if (strncmp(stored, CHECKSUM_PREFIX, sizeof(CHECKSUM_PREFIX) - 1) != 0 ||
      strcmp(stored + sizeof(CHECKSUM_PREFIX) - 1, sum) != 0) {
    status = corrupt(origin,
                     "checksum mismatch (stored '%s', computed " CHECKSUM_PREFIX
                     "%s)",
                     quote(stored, q, sizeof(q)), sum);
    goto out_delete;
  }

  /* Canonical form: what the writer makes of the entry read must be the
   * very bytes read. */
  status = serialize(&e->key, e, false, NULL, &e->signature, &text, &text_len);
  if (status && lf_status_code(status) != LF_STATUS_RESOURCE_EXHAUSTED) {
    lf_status_t c = corrupt(origin, "%s", lf_status_message(status));
    lf_status_free(status);
    status = c;
  }
  if (status)
    goto out_delete;
  if (text_len != len || memcmp(text, data, len) != 0) {
    status = corrupt(origin, "not in canonical form (edited by hand, or "
                             "trailing bytes after the entry)");
    goto out_delete;
  }

  if (expect) {
    size_t field = 0;
    if (!key_equal(&e->key, expect, &field)) {
      char q2[80];
      status = corrupt(origin,
                       "holds the entry of another key (%s '%s', "
                       "wanted '%s')",
                       key_fields[field].name,
                       quote(key_get(&e->key, field), q, sizeof(q)),
                       quote(key_get(expect, field), q2, sizeof(q2)));
      goto out_delete;
    }
  }
  *out_entry = e;
  e = NULL;

out_delete:
  free(text);
  lf_cache_entry_free(e);
  cJSON_Delete(root);
  return status;
}

/* ---- The cache directory -------------------------------------------------*/

lf_status_t lf_cache_default_dir(lf_strbuf_t *out) {
  const char *v = getenv("LLM_FUSE_CACHE_DIR");
  if (v && *v)
    return lf_strbuf_append_str(out, v);
  v = getenv("XDG_CACHE_HOME");
  if (v && v[0] == '/')
    return lf_strbuf_appendf(out, "%s/llm-fuse", v);
  v = getenv("HOME");
  if (v && *v)
    return lf_strbuf_appendf(out, "%s/.cache/llm-fuse", v);
  return LF_STATUS(LF_STATUS_FAILED_PRECONDITION,
                   "no cache directory: set LLM_FUSE_CACHE_DIR, "
                   "XDG_CACHE_HOME or HOME, or name one");
}

void lf_cache_options_init(lf_cache_options_t *options) {
  memset(options, 0, sizeof(*options));
  options->api_key_env = "OPENAI_API_KEY";
  options->push = true;
}

lf_status_t lf_cache_open(const char *dir, const lf_cache_options_t *options,
                          lf_cache_t **out_cache) {
  *out_cache = NULL;
  lf_cache_options_t defaults;
  lf_cache_options_init(&defaults);
  if (!options)
    options = &defaults;
  if (!dir || !*dir)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "cache directory is empty");
  if (strlen(dir) > PATH_MAX_BYTES - 200)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "cache directory path is too long");
  lf_cache_t *c = calloc(1, sizeof(*c));
  if (!c)
    return oom();
  bool failed = false;
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/')
    --n;
  c->dir = strndup(dir, n);
  failed = !c->dir;
  pthread_mutex_init(&c->lock, NULL);
  c->signer = options->signer;
  c->trusted = options->trusted;
  c->require_signed = options->require_signed;
  c->remote = options->remote;
  c->push = options->push;
  if (options->api_key_env && *options->api_key_env) {
    c->secret_env = dup_or_null(options->api_key_env, &failed);
    const char *v = getenv(options->api_key_env);
    if (v && strlen(v) >= LF_CACHE_MIN_SECRET_LEN)
      c->secret = dup_or_null(v, &failed);
  }
  if (failed) {
    lf_cache_close(c);
    return oom();
  }
  *out_cache = c;
  return LF_OK;
}

void lf_cache_close(lf_cache_t *cache) {
  if (!cache)
    return;
  if (cache->secret) {
    volatile char *p = cache->secret;
    while (*p)
      *p++ = 0;
    free(cache->secret);
  }
  free(cache->secret_env);
  free(cache->dir);
  pthread_mutex_destroy(&cache->lock);
  free(cache);
}

const char *lf_cache_dir(const lf_cache_t *cache) { return cache->dir; }

lf_status_t lf_cache_entry_path(const lf_cache_t *cache, const char *digest,
                                lf_strbuf_t *out) {
  if (!lf_sha256_is_hex(digest))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "cache digest is not 64 lower-case hex digits");
  return lf_strbuf_appendf(out, "%s/" LF_CACHE_LAYOUT "/%.2s/%s.json",
                           cache->dir, digest, digest);
}

/* mkdir -p of `path`'s parent folder. */
static lf_status_t make_parent_dirs(const char *path) {
  char buf[PATH_MAX_BYTES];
  size_t n = strlen(path);
  if (n >= sizeof(buf))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "path too long: %s", path);
  memcpy(buf, path, n + 1);
  char *slash = strrchr(buf, '/');
  if (!slash || slash == buf)
    return LF_OK;
  *slash = '\0';
  for (char *p = buf + 1;; ++p) {
    if (*p != '/' && *p != '\0')
      continue;
    char saved = *p;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      return LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot create '%s': %s", buf,
                       strerror(errno));
    *p = saved;
    if (!saved)
      break;
  }
  struct stat st;
  if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
    return LF_STATUS(LF_STATUS_UNAVAILABLE, "'%s' is not a directory", buf);
  return LF_OK;
}

/* Reads an entry file: NOT_FOUND when absent, DATA_LOSS when untrustworthy
 * (too large included, checked before reading), UNAVAILABLE for I/O. */
static lf_status_t read_entry_file(const char *path,
                                   const lf_cache_key_t *expect,
                                   lf_cache_entry_t **out_entry,
                                   uint64_t *out_size) {
  *out_entry = NULL;
  struct stat st;
  if (stat(path, &st) != 0)
    return LF_STATUS(errno == ENOENT ? LF_STATUS_NOT_FOUND
                                     : LF_STATUS_UNAVAILABLE,
                     "cannot stat '%s': %s", path, strerror(errno));
  if (out_size)
    *out_size = (uint64_t)st.st_size;
  if (!S_ISREG(st.st_mode))
    return corrupt(path, "not a regular file");
  if ((uint64_t)st.st_size > LF_CACHE_MAX_ENTRY_BYTES)
    return corrupt(path,
                   "%llu bytes, more than the %zu MiB an entry may "
                   "have",
                   (unsigned long long)st.st_size,
                   LF_CACHE_MAX_ENTRY_BYTES >> 20);
  lf_strbuf_t buf;
  lf_strbuf_init(&buf, LF_CACHE_MAX_ENTRY_BYTES);
  lf_status_t status = lf_read_file(path, &buf);
  if (lf_status_code(status) == LF_STATUS_RESOURCE_EXHAUSTED) {
    lf_status_free(status);
    status = corrupt(path, "grew past %zu MiB while read",
                     LF_CACHE_MAX_ENTRY_BYTES >> 20);
  }
  if (!status)
    status = lf_cache_entry_parse(buf.data, buf.len, expect, path, out_entry);
  lf_strbuf_free(&buf);
  return status;
}

static const char *const trust_names[] = {"none", "local", "signed",
                                          "demoted"};

const char *lf_cache_trust_name(lf_cache_trust_t trust) {
  return (unsigned)trust < 4 ? trust_names[trust] : "?";
}

lf_status_t lf_cache_entry_check_signature(const lf_keyring_t *trusted,
                                           const lf_cache_entry_t *entry) {
  if (!entry->signature.key_id[0])
    return LF_STATUS(LF_STATUS_PERMISSION_DENIED, "the entry is not signed");
  char msg[LF_CACHE_SIGNED_MESSAGE_SIZE];
  size_t n = 0;
  LF_RETURN_IF_ERROR(
      lf_cache_signed_message(entry->digest, entry->checksum, msg, &n));
  return lf_keyring_verify(trusted, entry->signature.key_id, msg, n,
                           entry->signature.value);
}

/* Sets entry->trust for a verdict found in `where`: signed when a trusted
 * key signed it, else `otherwise` (LOCAL or DEMOTED) with the reason. */
static void judge(const lf_cache_t *cache, lf_cache_entry_t *e,
                  lf_cache_trust_t otherwise, const char *where) {
  if (e->verdict == LF_CACHE_UNVERIFIED) {
    e->trust = LF_CACHE_TRUST_NONE;
    snprintf(e->trust_note, sizeof(e->trust_note),
             "unverified %s entry: nothing claimed", where);
    return;
  }
  lf_status_t st = lf_cache_entry_check_signature(cache->trusted, e);
  if (!st) {
    e->trust = LF_CACHE_TRUST_SIGNED;
    snprintf(e->trust_note, sizeof(e->trust_note),
             "%s verdict '%s' signed by trusted key %s", where,
             lf_cache_verdict_name(e->verdict), e->signature.key_id);
    return;
  }
  e->trust = otherwise;
  if (otherwise == LF_CACHE_TRUST_LOCAL)
    snprintf(e->trust_note, sizeof(e->trust_note),
             "%s verdict '%s' accepted from the local folder (%s)", where,
             lf_cache_verdict_name(e->verdict), lf_status_message(st));
  else
    snprintf(e->trust_note, sizeof(e->trust_note),
             "%s verdict '%s' not accepted: %s; kept as an unverified "
             "candidate",
             where, lf_cache_verdict_name(e->verdict), lf_status_message(st));
  lf_status_free(st);
}

static void note_rejection(lf_cache_t *cache, const char *digest,
                           lf_status_t st) {
  pthread_mutex_lock(&cache->lock);
  if (cache->num_rejections < MAX_REJECTIONS) {
    lf_cache_rejection_t *r = &cache->rejections[cache->num_rejections++];
    snprintf(r->digest, sizeof(r->digest), "%s", digest);
    snprintf(r->reason, sizeof(r->reason), "%s",
             lf_status_message(st) ? lf_status_message(st) : "?");
  }
  ++cache->total_rejections;
  pthread_mutex_unlock(&cache->lock);
}

const lf_cache_rejection_t *lf_cache_remote_rejections(const lf_cache_t *cache,
                                                       size_t *out_count,
                                                       size_t *out_total) {
  *out_count = cache->num_rejections;
  if (out_total)
    *out_total = cache->total_rejections;
  return cache->rejections;
}

lf_cache_remote_counts_t lf_cache_remote_counts(const lf_cache_t *cache) {
  lf_cache_t *c = (lf_cache_t *)cache;
  pthread_mutex_lock(&c->lock);
  lf_cache_remote_counts_t counts = c->counts;
  pthread_mutex_unlock(&c->lock);
  return counts;
}

static lf_status_t guard_entry(const lf_cache_t *cache,
                               const lf_cache_key_t *key,
                               const lf_cache_entry_t *e, const char *text,
                               size_t len);
static lf_status_t write_entry(lf_cache_t *cache, const char *digest,
                               const char *text, size_t len,
                               bool skip_identical, bool *out_written);

/* Turns a refused claim into an unverified candidate: the verification
 * record keeps its members (the build metadata a swap needs) with status
 * "unverified" and a "demoted" member saying what was claimed and why it
 * was refused. Serializes it (signed by this cache's signer, if any: the
 * signature then vouches for "unverified", which claims nothing) into
 * *out_text. */
static lf_status_t demote(const lf_cache_t *cache, lf_cache_entry_t *e,
                          char **out_text, size_t *out_len) {
  cJSON *rec = cJSON_Parse(e->verification_json ? e->verification_json : "{}");
  if (!rec)
    return oom();
  cJSON_DeleteItemFromObjectCaseSensitive(rec, "status");
  cJSON_DeleteItemFromObjectCaseSensitive(rec, "demoted");
  cJSON *d = cJSON_CreateObject();
  bool ok = d &&
            cJSON_AddStringToObject(d, "claimed",
                                    lf_cache_verdict_name(e->verdict)) &&
            cJSON_AddStringToObject(d, "signed_by", e->signature.key_id) &&
            cJSON_AddStringToObject(d, "reason", e->trust_note) &&
            cJSON_AddItemToObject(rec, "demoted", d);
  if (!ok)
    cJSON_Delete(d);
  char *text = ok ? cJSON_PrintUnformatted(rec) : NULL;
  cJSON_Delete(rec);
  if (!text)
    return oom();
  free(e->verification_json);
  e->verification_json = strdup(text);
  cJSON_free(text);
  if (!e->verification_json)
    return oom();
  e->verdict = LF_CACHE_UNVERIFIED;
  memset(&e->signature, 0, sizeof(e->signature));
  LF_RETURN_IF_ERROR(
      serialize(&e->key, e, false, cache->signer, NULL, out_text, out_len));
  /* The caller gets exactly what the file says (record with its status,
   * checksum, signature), with the trust it was judged to have. */
  lf_cache_entry_t *fresh = NULL;
  lf_status_t st =
      lf_cache_entry_parse(*out_text, *out_len, NULL, "demoted entry", &fresh);
  if (st) {
    free(*out_text);
    *out_text = NULL;
    *out_len = 0;
    return st;
  }
  fresh->trust = e->trust;
  fresh->from_remote = e->from_remote;
  memcpy(fresh->trust_note, e->trust_note, sizeof(e->trust_note));
  lf_cache_entry_t old = *e;
  *e = *fresh;
  *fresh = old;
  lf_cache_entry_free(fresh); /* the old members, and the fresh struct */
  return LF_OK;
}

/* The remote half of a lookup or a pull. */
static lf_status_t fetch_remote(lf_cache_t *cache, const lf_cache_key_t *key,
                                const char *digest,
                                lf_cache_entry_t **out_entry,
                                lf_cache_outcome_t *out_outcome) {
  *out_entry = NULL;
  *out_outcome = LF_CACHE_MISS;
  lf_strbuf_t body;
  lf_strbuf_init(&body, LF_CACHE_MAX_ENTRY_BYTES + 1);
  bool found = false;
  lf_status_t st = lf_remote_get(cache->remote, digest, &body, &found);
  if (st || !found) {
    if (st && lf_status_code(st) == LF_STATUS_DATA_LOSS) {
      note_rejection(cache, digest, st);
      *out_outcome = LF_CACHE_CORRUPT;
    }
    lf_strbuf_free(&body);
    return st;
  }
  char origin[2200];
  snprintf(origin, sizeof(origin), "remote cache %s/v1/%.2s/%s.json",
           lf_remote_display_url(cache->remote), digest, digest);
  lf_cache_entry_t *e = NULL;
  st = lf_cache_entry_parse(body.data, body.len, key, origin, &e);
  if (!st && !key) {
    if (strcmp(e->digest, digest) != 0)
      st = LF_STATUS(LF_STATUS_DATA_LOSS,
                     "%s: holds the entry of another key (digest %.12s)",
                     origin, e->digest);
  }
  if (!st)
    st = guard_entry(cache, &e->key, e, body.data, body.len);
  if (st) {
    if (lf_status_code(st) == LF_STATUS_PERMISSION_DENIED)
      st = lf_status_annotate(st, "%s", origin);
    note_rejection(cache, digest, st);
    lf_cache_entry_free(e);
    lf_strbuf_free(&body);
    *out_outcome = LF_CACHE_CORRUPT;
    if (lf_status_code(st) != LF_STATUS_DATA_LOSS) {
      lf_status_t d = LF_STATUS(LF_STATUS_DATA_LOSS, "%s",
                                lf_status_message(st));
      lf_status_free(st);
      st = d;
    }
    return st;
  }
  e->from_remote = true;
  judge(cache, e, LF_CACHE_TRUST_DEMOTED, "remote");
  char *text = NULL;
  size_t len = 0;
  if (e->trust == LF_CACHE_TRUST_DEMOTED) {
    st = demote(cache, e, &text, &len);
    pthread_mutex_lock(&cache->lock);
    ++cache->counts.demoted;
    pthread_mutex_unlock(&cache->lock);
  }
  if (!st)
    st = text ? write_entry(cache, digest, text, len, false, NULL)
              : write_entry(cache, digest, body.data, body.len, true, NULL);
  if (st) {
    /* Not kept locally: still usable for this run. */
    lf_log_status(LF_LOG_WARN, "cache: cannot keep the remote entry", st);
    st = LF_OK;
  }
  free(text);
  lf_strbuf_free(&body);
  pthread_mutex_lock(&cache->lock);
  ++cache->counts.fetched;
  pthread_mutex_unlock(&cache->lock);
  *out_entry = e;
  *out_outcome = LF_CACHE_HIT;
  return LF_OK;
}

lf_status_t lf_cache_lookup(lf_cache_t *cache, const lf_cache_key_t *key,
                            lf_cache_entry_t **out_entry,
                            lf_cache_outcome_t *out_outcome) {
  *out_entry = NULL;
  *out_outcome = LF_CACHE_MISS;
  char digest[LF_SHA256_HEX_SIZE];
  LF_RETURN_IF_ERROR(lf_cache_key_digest(key, digest));
  lf_strbuf_t path;
  lf_strbuf_init(&path, PATH_MAX_BYTES);
  lf_status_t status = lf_cache_entry_path(cache, digest, &path);
  if (!status)
    status = read_entry_file(path.data, key, out_entry, NULL);
  lf_strbuf_free(&path);
  if (!status) {
    *out_outcome = LF_CACHE_HIT;
    lf_cache_entry_t *e = *out_entry;
    judge(cache, e,
          cache->require_signed ? LF_CACHE_TRUST_DEMOTED
                                : LF_CACHE_TRUST_LOCAL,
          "local");
    if (e->trust == LF_CACHE_TRUST_DEMOTED) {
      char *text = NULL;
      size_t len = 0;
      lf_status_t d = demote(cache, e, &text, &len); /* in memory only */
      free(text);
      if (d) {
        lf_cache_entry_free(e);
        *out_entry = NULL;
        *out_outcome = LF_CACHE_MISS;
        return d;
      }
    }
    return LF_OK;
  }
  lf_status_code_t code = lf_status_code(status);
  if (code == LF_STATUS_DATA_LOSS)
    *out_outcome = LF_CACHE_CORRUPT;
  if (code != LF_STATUS_NOT_FOUND && code != LF_STATUS_DATA_LOSS)
    return status;
  if (!cache->remote) {
    if (code == LF_STATUS_NOT_FOUND) {
      lf_status_free(status);
      status = LF_OK;
    }
    return status;
  }
  /* Local miss or corrupt file: ask the store. */
  lf_cache_outcome_t rout = LF_CACHE_MISS;
  lf_status_t rs = fetch_remote(cache, key, digest, out_entry, &rout);
  if (!rs && rout == LF_CACHE_HIT) {
    if (code == LF_STATUS_DATA_LOSS)
      lf_log_status(LF_LOG_WARN, "cache: replaced from the remote store",
                    status);
    else
      lf_status_free(status);
    *out_outcome = LF_CACHE_HIT;
    return LF_OK;
  }
  if (rs && (lf_status_code(rs) != LF_STATUS_UNAVAILABLE ||
             !cache->down_logged)) {
    cache->down_logged |= lf_status_code(rs) == LF_STATUS_UNAVAILABLE;
    lf_log_status(LF_LOG_WARN, "cache", rs);
  } else {
    lf_status_free(rs);
  }
  if (code == LF_STATUS_NOT_FOUND) {
    lf_status_free(status);
    status = LF_OK;
  }
  return status;
}

lf_status_t lf_cache_pull(lf_cache_t *cache, const char *digest,
                          lf_cache_entry_t **out_entry,
                          lf_cache_outcome_t *out_outcome) {
  if (out_entry)
    *out_entry = NULL;
  *out_outcome = LF_CACHE_MISS;
  if (!cache->remote)
    return LF_STATUS(LF_STATUS_FAILED_PRECONDITION, "no remote cache named");
  if (!lf_sha256_is_hex(digest))
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "'%.80s' is not a 64-hex-digit cache digest", digest);
  lf_cache_entry_t *e = NULL;
  lf_status_t st = fetch_remote(cache, NULL, digest, &e, out_outcome);
  if (out_entry)
    *out_entry = e;
  else
    lf_cache_entry_free(e);
  return st;
}

lf_status_t lf_cache_push(lf_cache_t *cache, const char *digest,
                          bool only_missing, bool *out_pushed) {
  *out_pushed = false;
  if (!cache->remote)
    return LF_STATUS(LF_STATUS_FAILED_PRECONDITION, "no remote cache named");
  lf_strbuf_t path, data;
  lf_strbuf_init(&path, PATH_MAX_BYTES);
  lf_strbuf_init(&data, LF_CACHE_MAX_ENTRY_BYTES + 1);
  lf_cache_entry_t *e = NULL;
  lf_status_t st = lf_cache_entry_path(cache, digest, &path);
  if (!st)
    st = lf_read_file(path.data, &data);
  if (!st)
    st = lf_cache_entry_parse(data.data, data.len, NULL, path.data, &e);
  if (!st && strcmp(e->digest, digest) != 0)
    st = LF_STATUS(LF_STATUS_DATA_LOSS, "'%s' holds the entry of digest %s",
                   path.data, e->digest);
  bool have = false;
  int64_t remote_size = -1;
  if (!st && only_missing)
    st = lf_remote_head(cache->remote, digest, &have, &remote_size);
  if (!st && !(have && remote_size == (int64_t)data.len)) {
    st = lf_remote_put(cache->remote, digest, data.data, data.len);
    *out_pushed = !st;
  }
  lf_cache_entry_free(e);
  lf_strbuf_free(&data);
  lf_strbuf_free(&path);
  return st;
}

/* The secret guard: PERMISSION_DENIED naming `field` when `data` holds the
 * secret. */
static lf_status_t guard(const lf_cache_t *cache, const char *field,
                         const void *data, size_t len) {
  if (!cache->secret || !data)
    return LF_OK;
  if (!memmem(data, len, cache->secret, strlen(cache->secret)))
    return LF_OK;
  return LF_STATUS(LF_STATUS_PERMISSION_DENIED,
                   "refusing to write a cache entry whose %s contains the "
                   "value of $%s (API keys never go into the cache)",
                   field, cache->secret_env);
}

static lf_status_t guard_str(const lf_cache_t *cache, const char *field,
                             const char *s) {
  return s ? guard(cache, field, s, strlen(s)) : LF_OK;
}

static lf_status_t guard_entry(const lf_cache_t *cache,
                               const lf_cache_key_t *key,
                               const lf_cache_entry_t *e, const char *text,
                               size_t len) {
  for (size_t i = 0; i < KEY_FIELD_COUNT; ++i)
    LF_RETURN_IF_ERROR(guard_str(cache, key_fields[i].name, key_get(key, i)));
  LF_RETURN_IF_ERROR(guard_str(cache, "kernel", e->kernel));
  LF_RETURN_IF_ERROR(guard_str(cache, "ptx", e->ptx));
  LF_RETURN_IF_ERROR(guard(cache, "cubin", e->cubin, e->cubin_len));
  LF_RETURN_IF_ERROR(
      guard_str(cache, "verification record", e->verification_json));
  LF_RETURN_IF_ERROR(guard_str(cache, "provenance", e->provenance.provider));
  LF_RETURN_IF_ERROR(guard_str(cache, "provenance", e->provenance.model));
  LF_RETURN_IF_ERROR(
      guard_str(cache, "provenance", e->provenance.prompt_version));
  LF_RETURN_IF_ERROR(
      guard_str(cache, "provenance", e->provenance.tool_version));
  return guard(cache, "serialized form", text, len);
}

static lf_status_t write_entry(lf_cache_t *cache, const char *digest,
                               const char *text, size_t len,
                               bool skip_identical, bool *out_written) {
  lf_strbuf_t path;
  lf_strbuf_init(&path, PATH_MAX_BYTES);
  lf_status_t status = lf_cache_entry_path(cache, digest, &path);
  if (status)
    goto out_free;
  if (out_written)
    *out_written = false;
  if (skip_identical) {
    lf_strbuf_t old;
    lf_strbuf_init(&old, len);
    lf_status_t r = lf_read_file(path.data, &old);
    bool same = !r && old.len == len && memcmp(old.data, text, len) == 0;
    lf_status_free(r);
    lf_strbuf_free(&old);
    if (same)
      goto out_free;
  }
  status = make_parent_dirs(path.data);
  if (!status)
    status = lf_write_file_atomic(path.data, text, len);
  if (!status && out_written)
    *out_written = true;
out_free:
  lf_strbuf_free(&path);
  return status;
}

lf_status_t lf_cache_store(lf_cache_t *cache, const lf_cache_key_t *key,
                           const lf_cache_entry_t *entry,
                           char out_digest[LF_SHA256_HEX_SIZE]) {
  char digest[LF_SHA256_HEX_SIZE];
  if (out_digest)
    out_digest[0] = '\0';
  LF_RETURN_IF_ERROR(lf_cache_key_digest(key, digest));
  char *text = NULL;
  size_t len = 0;
  LF_RETURN_IF_ERROR(
      serialize(key, entry, true, cache->signer, NULL, &text, &len));
  lf_status_t status = guard_entry(cache, key, entry, text, len);
  if (!status)
    status = write_entry(cache, digest, text, len, false, NULL);
  if (!status && out_digest)
    memcpy(out_digest, digest, sizeof(digest));
  if (!status && cache->remote && cache->push &&
      !lf_remote_is_down(cache->remote)) {
    /* What is worth sharing: a signed entry (its verdict counts for those
     * who trust the key), or a new unverified candidate (model tokens
     * saved). An unsigned verdict counts for nobody else, and pushing it
     * would replace a signed entry in the store. */
    lf_status_t ps = LF_OK;
    bool have = false;
    if (!cache->signer && entry->verdict != LF_CACHE_UNVERIFIED) {
      pthread_mutex_lock(&cache->lock);
      ++cache->counts.push_skipped;
      pthread_mutex_unlock(&cache->lock);
    } else {
      if (!cache->signer)
        ps = lf_remote_head(cache->remote, digest, &have, NULL);
      if (!ps && !have)
        ps = lf_remote_put(cache->remote, digest, text, len);
    }
    if (ps) {
      pthread_mutex_lock(&cache->lock);
      bool first = cache->counts.push_failures++ == 0;
      pthread_mutex_unlock(&cache->lock);
      if (first)
        lf_log_status(LF_LOG_WARN, "cache: push to the remote store", ps);
      else
        lf_status_free(ps);
    }
  }
  free(text);
  return status;
}

lf_status_t lf_cache_store_raw(lf_cache_t *cache, const char *data, size_t len,
                               const char *origin,
                               char out_digest[LF_SHA256_HEX_SIZE],
                               bool *out_written) {
  if (out_digest)
    out_digest[0] = '\0';
  if (out_written)
    *out_written = false;
  lf_cache_entry_t *e = NULL;
  LF_RETURN_IF_ERROR(lf_cache_entry_parse(data, len, NULL, origin, &e));
  lf_status_t status = guard_entry(cache, &e->key, e, data, len);
  if (!status)
    status = write_entry(cache, e->digest, data, len, true, out_written);
  if (!status && out_digest)
    memcpy(out_digest, e->digest, LF_SHA256_HEX_SIZE);
  lf_cache_entry_free(e);
  return status;
}

lf_status_t lf_cache_remove(lf_cache_t *cache, const char *digest) {
  lf_strbuf_t path;
  lf_strbuf_init(&path, PATH_MAX_BYTES);
  lf_status_t status = lf_cache_entry_path(cache, digest, &path);
  if (!status && unlink(path.data) != 0)
    status =
        LF_STATUS(errno == ENOENT ? LF_STATUS_NOT_FOUND : LF_STATUS_UNAVAILABLE,
                  "cannot remove '%s': %s", path.data, strerror(errno));
  lf_strbuf_free(&path);
  return status;
}

/* ---- Walking the cache ---------------------------------------------------*/

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in folder `dir`, sorted, without "." and "..". NOT_FOUND when
 * the folder does not exist. */
static lf_status_t sorted_names(const char *dir, char ***out_names,
                                size_t *out_count) {
  *out_names = NULL;
  *out_count = 0;
  DIR *d = opendir(dir);
  if (!d)
    return LF_STATUS(errno == ENOENT ? LF_STATUS_NOT_FOUND
                                     : LF_STATUS_UNAVAILABLE,
                     "cannot read folder '%s': %s", dir, strerror(errno));
  lf_status_t status = LF_OK;
  char **names = NULL;
  size_t count = 0, alloc = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    if (count == alloc) {
      size_t na = alloc ? alloc * 2 : 16;
      char **nn = realloc(names, na * sizeof(*nn));
      if (!nn)
        goto out_oom;
      names = nn;
      alloc = na;
    }
    if (!(names[count] = strdup(de->d_name)))
      goto out_oom;
    ++count;
  }
  closedir(d);
  if (count)
    qsort(names, count, sizeof(*names), compare_names);
  *out_names = names;
  *out_count = count;
  return LF_OK;

out_oom:
  status = oom();
  closedir(d);
  for (size_t i = 0; i < count; ++i)
    free(names[i]);
  free(names);
  return status;
}

static void free_names(char **names, size_t count) {
  for (size_t i = 0; i < count; ++i)
    free(names[i]);
  free(names);
}

/* Classifies and reports one file; returns the callback's verdict. */
static bool visit_file(const char *path, const char *folder, const char *name,
                       const struct stat *st, lf_cache_list_fn_t fn,
                       void *user) {
  lf_cache_file_t f = {path,
                       "",
                       LF_CACHE_FILE_CORRUPT,
                       "",
                       (uint64_t)st->st_size,
                       (int64_t)st->st_mtime,
                       NULL};
  char digest[LF_SHA256_HEX_SIZE] = "";
  lf_cache_entry_t *entry = NULL;
  lf_status_t status = LF_OK;
  size_t n = strlen(name);
  if (n >= 64) {
    memcpy(digest, name, 64);
    digest[64] = '\0';
  }
  bool named = lf_sha256_is_hex(digest);
  if (named && strncmp(name + 64, ".json.tmp.", 10) == 0) {
    f.digest = digest;
    f.state = LF_CACHE_FILE_TEMP;
  } else if (named && strcmp(name + 64, ".json") == 0) {
    f.digest = digest;
    if (strncmp(folder, digest, 2) != 0 || folder[2] != '\0') {
      status = corrupt(path, "is in folder '%s'; entry %s belongs in '%.2s'",
                       folder, digest, digest);
    } else {
      status = read_entry_file(path, NULL, &entry, &f.size);
      if (!status && strcmp(entry->digest, digest) != 0)
        status = corrupt(path,
                         "file name is not the digest of the key it "
                         "holds (%s): copied or renamed?",
                         entry->digest);
    }
    if (!status) {
      f.state = LF_CACHE_FILE_OK;
      f.entry = entry;
    }
  } else {
    status = corrupt(path, "not a cache entry (expected <digest>.json)");
  }
  if (status)
    f.reason = lf_status_message(status);
  bool go_on = fn(&f, user);
  lf_status_free(status);
  lf_cache_entry_free(entry);
  return go_on;
}

lf_status_t lf_cache_list(lf_cache_t *cache, lf_cache_list_fn_t fn,
                          void *user) {
  lf_strbuf_t root, path;
  lf_strbuf_init(&root, PATH_MAX_BYTES);
  lf_strbuf_init(&path, PATH_MAX_BYTES);
  char **folders = NULL;
  size_t folder_count = 0;
  lf_status_t status =
      lf_strbuf_appendf(&root, "%s/" LF_CACHE_LAYOUT, cache->dir);
  if (!status)
    status = sorted_names(root.data, &folders, &folder_count);
  if (lf_status_code(status) == LF_STATUS_NOT_FOUND) {
    lf_status_free(status);
    status = LF_OK;
    goto out_free;
  }
  bool go_on = true;
  for (size_t i = 0; !status && go_on && i < folder_count; ++i) {
    struct stat st;
    lf_strbuf_reset(&path);
    status = lf_strbuf_appendf(&path, "%s/%s", root.data, folders[i]);
    if (status)
      break;
    if (lstat(path.data, &st) != 0)
      continue; /* vanished meanwhile */
    if (!S_ISDIR(st.st_mode)) {
      go_on = visit_file(path.data, "", folders[i], &st, fn, user);
      continue;
    }
    char **files = NULL;
    size_t file_count = 0;
    status = sorted_names(path.data, &files, &file_count);
    if (lf_status_code(status) == LF_STATUS_NOT_FOUND) {
      lf_status_free(status);
      status = LF_OK;
      continue;
    }
    size_t base = path.len;
    for (size_t j = 0; !status && go_on && j < file_count; ++j) {
      lf_strbuf_truncate(&path, base);
      status = lf_strbuf_appendf(&path, "/%s", files[j]);
      if (status || lstat(path.data, &st) != 0)
        continue;
      if (S_ISDIR(st.st_mode)) {
        LF_LOG_WARN("cache: ignoring unexpected folder '%s'", path.data);
        continue;
      }
      go_on = visit_file(path.data, folders[i], files[j], &st, fn, user);
    }
    free_names(files, file_count);
  }

out_free:
  free_names(folders, folder_count);
  lf_strbuf_free(&path);
  lf_strbuf_free(&root);
  return status;
}
