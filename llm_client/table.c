/* table.c - the pattern table: loading, indexing, instantiating. */
#include "llm_client/table.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/base64.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/sha256.h"
#include "llm_client/datadir.h"
#include "llm_client/tune.h"

#define MARK "// llm-fuse.template-size "
#define BUCKETS 4096 /* open hashing on the pattern key's first hex digits */

typedef struct entry_s {
  char pattern[65];
  char **archs;
  size_t num_archs;
  int64_t fixed[LF_TABLE_MAX_SIZES]; /* -1: free */
  size_t num_sizes;
  char *template_text;
  char id[96];
  char source[256];
  char klass[32];
  char precision[8]; /* "" exact, "tf32" */
  char checksum[LF_SHA256_HEX_SIZE];
  char signed_by[LF_SIGN_KEY_ID_SIZE]; /* "" unsigned */
  unsigned char signature[LF_SIGN_BYTES];
  char *path;
  size_t seq;            /* place in load order (folder, then file name) */
  struct entry_s *next;  /* same bucket, in specificity then load order */
  struct entry_s *order; /* all entries, in load order */
} entry_t;

/* A folder added to the table, with the trust rule in force then. */
typedef struct folder_s {
  char *path; /* <dir>/v1 */
  bool check_trust, require_signed;
  const lf_keyring_t *trusted;
} folder_t;

/* An entry file not read yet: a file named <pattern[0:16]>-<name>.json[.gz]
 * is read on the first lookup of a pattern with that prefix (or by
 * lf_table_foreach), so a compile reads only the entries of its own keys. */
typedef struct pending_s {
  size_t folder;
  char *name;
  char prefix[17];
  size_t seq;
  size_t next; /* 1 + the next pending file of its bucket; 0: none */
} pending_t;

struct lf_table_s {
  entry_t *buckets[BUCKETS];
  entry_t *first, *last; /* load order */
  size_t count, skipped;
  bool check_trust, require_signed; /* lf_table_set_trust */
  const lf_keyring_t *trusted;
  folder_t *folders;
  size_t num_folders;
  pending_t *pending; /* in load order; name NULL once read */
  size_t num_pending, unread, next_seq;
  /* 1 + the first and last pending file of each bucket (0: none), so a
   * lookup walks only its bucket's files, in load order. */
  size_t pending_head[BUCKETS], pending_tail[BUCKETS];
  pthread_mutex_t lock; /* lazy reads: lookups may come from any thread */
  /* The patterns' abstracted texts (lf_table_coincident), read on first
   * use from each folder's patterns.json.gz: keys[i] hashes texts[i]. */
  bool index_read;
  char **index_keys, **index_texts;
  size_t num_index, index_skipped;
};

#define SIGNATURE_SCHEMA "llm-fuse-table-signature/1"

/* The message an entry's signature covers. */
static int signed_message(const char *pattern, const char *checksum,
                          char *out, size_t size) {
  return snprintf(out, size, SIGNATURE_SCHEMA "\n%s\nsha256:%s\n", pattern,
                  checksum);
}

static lf_status_t oom(void) {
  return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
}

/* How many of an entry's sizes are fixed: its specificity. */
static size_t fixed_count(const entry_t *e) {
  size_t n = 0;
  for (size_t i = 0; i < e->num_sizes; ++i)
    n += e->fixed[i] >= 0;
  return n;
}

static unsigned bucket_of(const char *pattern) {
  unsigned h = 0;
  for (int i = 0; i < 3; ++i) {
    char c = pattern[i];
    h = h * 16 + (unsigned)(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return h % BUCKETS;
}

static void entry_free(entry_t *e) {
  if (!e)
    return;
  for (size_t i = 0; i < e->num_archs; ++i)
    free(e->archs[i]);
  free(e->archs);
  free(e->template_text);
  free(e->path);
  free(e);
}

lf_status_t lf_table_default_dir(lf_strbuf_t *out) {
  return lf_llm_data_dir("LLM_FUSE_TABLE_DIR", "table", LF_TABLE_DIR, out);
}

/* The checksum: SHA-256 of the schema line, the pattern, the archs joined
 * by ',', the sizes as "S0=*,S1=4096", the class, "precision=<p>" (only
 * for an entry with a precision) and the template, each followed by "\n". */
static lf_status_t entry_checksum(const entry_t *e, const char *klass,
                                  char out[LF_SHA256_HEX_SIZE]) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, LF_TABLE_MAX_ENTRY_BYTES + 4096);
  lf_status_t st = lf_strbuf_appendf(&b, LF_TABLE_ENTRY_SCHEMA "\n%s\n",
                                     e->pattern);
  for (size_t i = 0; !st && i < e->num_archs; ++i)
    st = lf_strbuf_appendf(&b, "%s%s", i ? "," : "", e->archs[i]);
  if (!st)
    st = lf_strbuf_append_str(&b, "\n");
  for (size_t i = 0; !st && i < e->num_sizes; ++i) {
    if (e->fixed[i] < 0)
      st = lf_strbuf_appendf(&b, "%sS%zu=*", i ? "," : "", i);
    else
      st = lf_strbuf_appendf(&b, "%sS%zu=%lld", i ? "," : "", i,
                             (long long)e->fixed[i]);
  }
  if (!st)
    st = lf_strbuf_appendf(&b, "\n%s\n", klass);
  if (!st && e->precision[0])
    st = lf_strbuf_appendf(&b, "precision=%s\n", e->precision);
  if (!st)
    st = lf_strbuf_append_str(&b, e->template_text);
  if (!st)
    st = lf_sha256_hex(b.data, b.len, out);
  lf_strbuf_free(&b);
  return st;
}

/* Parses one entry file; DATA_LOSS naming the file for any defect. */
static lf_status_t parse_entry(const char *path, const char *name,
                               const char *data, size_t len,
                               entry_t **out) {
  *out = NULL;
  cJSON *root = cJSON_ParseWithLength(data, len);
  if (!root)
    return LF_STATUS(LF_STATUS_DATA_LOSS, "%s: not JSON", path);
  lf_status_t st = LF_OK;
  entry_t *e = calloc(1, sizeof(*e));
  if (!e) {
    cJSON_Delete(root);
    return oom();
  }
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
  const cJSON *pattern = cJSON_GetObjectItemCaseSensitive(root, "pattern");
  const cJSON *archs = cJSON_GetObjectItemCaseSensitive(root, "archs");
  const cJSON *klass = cJSON_GetObjectItemCaseSensitive(root, "class");
  const cJSON *sizes = cJSON_GetObjectItemCaseSensitive(root, "sizes");
  const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(root, "template");
  const cJSON *source = cJSON_GetObjectItemCaseSensitive(root, "source");
  const cJSON *sum = cJSON_GetObjectItemCaseSensitive(root, "checksum");
  const cJSON *prec = cJSON_GetObjectItemCaseSensitive(root, "precision");
  if (prec && !(cJSON_IsString(prec) && strcmp(prec->valuestring, "tf32") == 0))
    st = LF_STATUS(LF_STATUS_DATA_LOSS,
                   "%s: precision is not \"tf32\" (an exact entry has none)",
                   path);
  else if (!cJSON_IsString(schema) ||
      strcmp(schema->valuestring, LF_TABLE_ENTRY_SCHEMA) != 0)
    st = LF_STATUS(LF_STATUS_DATA_LOSS, "%s: schema is not '%s'", path,
                   LF_TABLE_ENTRY_SCHEMA);
  else if (!cJSON_IsString(pattern) ||
           !lf_sha256_is_hex(pattern->valuestring))
    st = LF_STATUS(LF_STATUS_DATA_LOSS,
                   "%s: pattern is not 64 lower-case hex digits", path);
  else if (!cJSON_IsArray(archs) || cJSON_GetArraySize(archs) < 1 ||
           cJSON_GetArraySize(archs) > 8)
    st = LF_STATUS(LF_STATUS_DATA_LOSS, "%s: archs is not a list of 1-8",
                   path);
  else if (!cJSON_IsString(klass) || !cJSON_IsObject(sizes) ||
           !cJSON_IsString(tmpl) || !tmpl->valuestring[0] ||
           !cJSON_IsString(sum))
    st = LF_STATUS(LF_STATUS_DATA_LOSS,
                   "%s: class, sizes, template or checksum missing or "
                   "mistyped",
                   path);
  if (!st) {
    memcpy(e->pattern, pattern->valuestring, 65);
    e->archs = calloc(8, sizeof(char *));
    if (!e->archs)
      st = oom();
    const cJSON *a;
    cJSON_ArrayForEach(a, archs) {
      if (st)
        break;
      if (!cJSON_IsString(a) || strncmp(a->valuestring, "sm_", 3) != 0 ||
          strlen(a->valuestring) > 8)
        st = LF_STATUS(LF_STATUS_DATA_LOSS, "%s: an arch is not sm_NN[a]",
                       path);
      else if (!(e->archs[e->num_archs++] = strdup(a->valuestring)))
        st = oom();
    }
  }
  /* sizes: exactly S0..S<n-1>, in order, each null or a positive integer. */
  size_t n = 0;
  const cJSON *s;
  if (!st) {
    cJSON_ArrayForEach(s, sizes) {
      char want[8];
      snprintf(want, sizeof(want), "S%zu", n);
      if (n >= LF_TABLE_MAX_SIZES || !s->string ||
          strcmp(s->string, want) != 0) {
        st = LF_STATUS(LF_STATUS_DATA_LOSS,
                       "%s: sizes must be S0, S1, ... in order (at most %d)",
                       path, LF_TABLE_MAX_SIZES);
        break;
      }
      if (cJSON_IsNull(s)) {
        e->fixed[n] = -1;
      } else if (cJSON_IsNumber(s) && s->valuedouble >= 1 &&
                 s->valuedouble <= 2147483647.0 &&
                 s->valuedouble == (double)(int64_t)s->valuedouble) {
        e->fixed[n] = (int64_t)s->valuedouble;
      } else {
        st = LF_STATUS(LF_STATUS_DATA_LOSS,
                       "%s: size %s is neither null nor an integer in "
                       "1..2^31-1",
                       path, want);
        break;
      }
      ++n;
    }
    e->num_sizes = n;
  }
  if (!st && strlen(tmpl->valuestring) > LF_TABLE_MAX_ENTRY_BYTES)
    st = LF_STATUS(LF_STATUS_DATA_LOSS, "%s: template too large", path);
  if (!st && !(e->template_text = strdup(tmpl->valuestring)))
    st = oom();
  if (!st && prec)
    snprintf(e->precision, sizeof(e->precision), "%s", prec->valuestring);
  if (!st) {
    char want[LF_SHA256_HEX_SIZE];
    st = entry_checksum(e, klass->valuestring, want);
    if (!st && (strncmp(sum->valuestring, "sha256:", 7) != 0 ||
                strcmp(sum->valuestring + 7, want) != 0))
      st = LF_STATUS(LF_STATUS_DATA_LOSS,
                     "%s: checksum mismatch (the entry was changed)", path);
  }
  const cJSON *sig = cJSON_GetObjectItemCaseSensitive(root, "signature");
  if (!st)
    memcpy(e->checksum, sum->valuestring + 7, LF_SHA256_HEX_SIZE);
  if (!st && sig) {
    const cJSON *alg = cJSON_GetObjectItemCaseSensitive(sig, "alg");
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(sig, "key");
    const cJSON *val = cJSON_GetObjectItemCaseSensitive(sig, "value");
    bool hex = cJSON_IsString(key) &&
               strlen(key->valuestring) == LF_SIGN_KEY_ID_SIZE - 1;
    for (const char *k = hex ? key->valuestring : ""; hex && *k; ++k)
      hex = (*k >= '0' && *k <= '9') || (*k >= 'a' && *k <= 'f');
    unsigned char *bytes = NULL;
    size_t nbytes = 0;
    bool oom_hit = false;
    if (!cJSON_IsObject(sig) || !cJSON_IsString(alg) ||
        strcmp(alg->valuestring, "ed25519") != 0 || !hex ||
        !cJSON_IsString(val) ||
        !lf_base64_decode(val->valuestring, &bytes, &nbytes, &oom_hit) ||
        nbytes != LF_SIGN_BYTES)
      st = oom_hit ? oom()
                   : LF_STATUS(LF_STATUS_DATA_LOSS,
                               "%s: signature is not {\"alg\": \"ed25519\", "
                               "\"key\": <16 hex>, \"value\": <base64 of %d "
                               "bytes>}",
                               path, LF_SIGN_BYTES);
    if (!st) {
      memcpy(e->signed_by, key->valuestring, LF_SIGN_KEY_ID_SIZE);
      memcpy(e->signature, bytes, LF_SIGN_BYTES);
    }
    free(bytes);
  }
  if (!st) {
    snprintf(e->id, sizeof(e->id), "%.16s/%s", e->pattern, name);
    snprintf(e->source, sizeof(e->source), "%s",
             cJSON_IsString(source) ? source->valuestring : "?");
    snprintf(e->klass, sizeof(e->klass), "%s", klass->valuestring);
    if (!(e->path = strdup(path)))
      st = oom();
  }
  cJSON_Delete(root);
  if (st) {
    entry_free(e);
    return st;
  }
  *out = e;
  return LF_OK;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n > m && strcmp(s + n - m, tail) == 0;
}

/* Inflates the gzip data `in` into `out` (whose cap bounds the result). */
static lf_status_t gunzip(const char *path, const lf_strbuf_t *in,
                          lf_strbuf_t *out) {
  z_stream z;
  memset(&z, 0, sizeof(z));
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
    return oom();
  z.next_in = (Bytef *)in->data;
  z.avail_in = (uInt)in->len;
  lf_status_t st = LF_OK;
  unsigned char chunk[65536];
  int rc = Z_OK;
  while (!st && rc != Z_STREAM_END) {
    z.next_out = chunk;
    z.avail_out = sizeof(chunk);
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      st = rc == Z_MEM_ERROR
               ? oom()
               : LF_STATUS(LF_STATUS_DATA_LOSS, "%s: not gzip data (%s)",
                           path, z.msg ? z.msg : "truncated");
      break;
    }
    size_t got = sizeof(chunk) - z.avail_out;
    if (got && lf_strbuf_append(out, chunk, got) != LF_OK)
      st = LF_STATUS(LF_STATUS_DATA_LOSS,
                     "%s: inflates to more than %zu bytes", path, out->cap);
    if (!st && rc == Z_OK && !got && !z.avail_in)
      st = LF_STATUS(LF_STATUS_DATA_LOSS, "%s: not gzip data (truncated)",
                     path);
  }
  if (!st && z.avail_in)
    st = LF_STATUS(LF_STATUS_DATA_LOSS,
                   "%s: bytes after the end of the gzip data", path);
  inflateEnd(&z);
  return st;
}

lf_status_t lf_table_read_entry_file(const char *path, lf_strbuf_t *out) {
  if (!ends_with(path, ".gz"))
    return lf_read_file(path, out);
  lf_strbuf_t raw;
  lf_strbuf_init(&raw, LF_TABLE_MAX_ENTRY_BYTES + 65536);
  lf_status_t st = lf_read_file(path, &raw);
  if (!st)
    st = gunzip(path, &raw, out);
  lf_strbuf_free(&raw);
  return st;
}

/* Whether a file name is an entry's: <name>.json or <name>.json.gz. */
static bool entry_file_name(const char *name) {
  return ends_with(name, ".json") || ends_with(name, ".json.gz");
}

/* The 16 lower-case hex digits a file name starts with, before a '-'. */
static bool name_prefix(const char *name, char out[17]) {
  for (int i = 0; i < 16; ++i) {
    char c = name[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
    out[i] = c;
  }
  out[16] = '\0';
  return name[16] == '-';
}

/* The trust rule of lf_table_set_trust for one parsed entry (freed here
 * when refused). */
static lf_status_t check_trust(const folder_t *f, entry_t *e) {
  lf_status_t st = LF_OK;
  if (e->signed_by[0]) {
    char msg[256];
    int n = signed_message(e->pattern, e->checksum, msg, sizeof(msg));
    st = lf_keyring_verify(f->trusted, e->signed_by, msg, (size_t)n,
                           e->signature);
    if (st)
      st = lf_status_annotate(st, "%s: forged or untrusted", e->path);
  } else if (f->require_signed) {
    st = LF_STATUS(LF_STATUS_PERMISSION_DENIED,
                   "%s: the entry is not signed (a trusted signature is "
                   "required)",
                   e->path);
  }
  if (st)
    entry_free(e);
  return st;
}

/* Links a parsed entry into its bucket and the load-order list. Each
 * bucket is kept most specific first: after every entry with more fixed
 * sizes, and after those with as many that load earlier, so a lookup's
 * first admitting entry is one made for those sizes (tuned for them)
 * before a general template; load (folder, file-name) order among
 * equals, whatever order the files were read in. */
static void link_entry(lf_table_t *t, entry_t *e) {
  entry_t **at = &t->first;
  while (*at && (*at)->seq < e->seq)
    at = &(*at)->order;
  e->order = *at;
  *at = e;
  if (!e->order)
    t->last = e;
  entry_t **tail = &t->buckets[bucket_of(e->pattern)];
  while (*tail && (fixed_count(*tail) > fixed_count(e) ||
                   (fixed_count(*tail) == fixed_count(e) &&
                    (*tail)->seq < e->seq)))
    tail = &(*tail)->next;
  e->next = *tail;
  *tail = e;
  ++t->count;
}

/* Reads, checks and links one entry file; a defect is logged and counted,
 * never fatal. `prefix` (may be NULL) is the pattern prefix its name
 * promises. */
static void load_one(lf_table_t *t, size_t folder, const char *name,
                     const char *prefix, size_t seq) {
  const folder_t *f = &t->folders[folder];
  char path[4400];
  snprintf(path, sizeof(path), "%s/%s", f->path, name);
  /* The id names the entry as written, ".gz" or not. */
  char id_name[300];
  snprintf(id_name, sizeof(id_name), "%s", name);
  if (ends_with(id_name, ".gz"))
    id_name[strlen(id_name) - 3] = '\0';
  lf_strbuf_t buf;
  lf_strbuf_init(&buf, LF_TABLE_MAX_ENTRY_BYTES + 65536);
  lf_status_t st = lf_table_read_entry_file(path, &buf);
  entry_t *e = NULL;
  if (!st)
    st = parse_entry(path, id_name, buf.data, buf.len, &e);
  lf_strbuf_free(&buf);
  if (!st && prefix && strncmp(e->pattern, prefix, 16) != 0) {
    st = LF_STATUS(LF_STATUS_DATA_LOSS,
                   "%s: the file name's pattern prefix %s is not the "
                   "entry's pattern %.16s",
                   path, prefix, e->pattern);
    entry_free(e);
  }
  if (!st && f->check_trust)
    st = check_trust(f, e);
  if (st) {
    ++t->skipped;
    lf_log_status(LF_LOG_WARN, "pattern table: entry skipped", st);
    return;
  }
  e->seq = seq;
  link_entry(t, e);
}

/* Reads the pending file i (the lock held). */
static void read_one_pending(lf_table_t *t, pending_t *p) {
  load_one(t, p->folder, p->name, p->prefix, p->seq);
  free(p->name);
  p->name = NULL;
  --t->unread;
}

/* Reads the pending files whose name promises `pattern`'s prefix (every
 * pending file with NULL). Called with the lock held. */
static void read_pending(lf_table_t *t, const char *pattern) {
  if (!t->unread)
    return;
  if (!pattern) {
    for (size_t i = 0; i < t->num_pending; ++i)
      if (t->pending[i].name)
        read_one_pending(t, &t->pending[i]);
    memset(t->pending_head, 0, sizeof(t->pending_head));
    memset(t->pending_tail, 0, sizeof(t->pending_tail));
    return;
  }
  unsigned b = bucket_of(pattern);
  size_t *link = &t->pending_head[b], prev = 0;
  while (*link) {
    size_t i = *link - 1;
    pending_t *p = &t->pending[i];
    if (strncmp(p->prefix, pattern, 16) != 0) {
      prev = *link;
      link = &p->next;
      continue;
    }
    *link = p->next; /* unlink, then read */
    if (!p->next)
      t->pending_tail[b] = prev;
    if (p->name)
      read_one_pending(t, p);
  }
}

/* Takes the table's lock and reads the pending files of `pattern` (all of
 * them with NULL): what every lookup does first. Unlock t->lock after. */
static lf_table_t *lock_and_read(const lf_table_t *table, const char *pattern) {
  lf_table_t *t = (lf_table_t *)table;
  pthread_mutex_lock(&t->lock);
  read_pending(t, pattern);
  return t;
}

static lf_table_t *table_new(void) {
  lf_table_t *t = calloc(1, sizeof(*t));
  pthread_mutexattr_t a;
  if (t && pthread_mutexattr_init(&a) == 0) {
    /* recursive: a foreach callback may look entries up */
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    if (pthread_mutex_init(&t->lock, &a) != 0) {
      free(t);
      t = NULL;
    }
    pthread_mutexattr_destroy(&a);
  } else {
    free(t);
    t = NULL;
  }
  return t;
}

void lf_table_set_trust(lf_table_t *table, const lf_keyring_t *trusted,
                        bool require_signed) {
  if (!table)
    return;
  table->check_trust = true;
  table->trusted = trusted;
  table->require_signed = require_signed;
}

lf_status_t lf_table_open_trusted(const char *dir, const lf_keyring_t *trusted,
                                  bool require_signed,
                                  lf_table_t **out_table) {
  *out_table = NULL;
  lf_table_t *t = table_new();
  if (!t)
    return oom();
  lf_table_set_trust(t, trusted, require_signed);
  lf_status_t st = lf_table_add_dir(t, dir);
  if (st) {
    lf_table_close(t);
    return st;
  }
  *out_table = t;
  return LF_OK;
}

lf_status_t lf_table_open(const char *dir, lf_table_t **out_table) {
  *out_table = NULL;
  lf_table_t *t = table_new();
  if (!t)
    return oom();
  lf_status_t st = lf_table_add_dir(t, dir);
  if (st) {
    lf_table_close(t);
    return st;
  }
  *out_table = t;
  return LF_OK;
}

lf_status_t lf_table_add_dir(lf_table_t *t, const char *dir) {
  char folder[4096];
  snprintf(folder, sizeof(folder), "%s/v1", dir);
  DIR *d = opendir(folder);
  if (!d)
    return LF_OK; /* no folder: nothing to add */
  char **names = NULL;
  size_t count = 0, cap = 0;
  bool short_of_memory = false;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!entry_file_name(de->d_name))
      continue;
    if (count == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, cap * sizeof(*nn));
      if (!nn) {
        short_of_memory = true;
        break;
      }
      names = nn;
    }
    if (!(names[count] = strdup(de->d_name))) {
      short_of_memory = true;
      break;
    }
    ++count;
  }
  closedir(d);
  folder_t *nf = short_of_memory ? NULL
                                 : realloc(t->folders, (t->num_folders + 1) *
                                                           sizeof(*nf));
  pending_t *np = nf ? realloc(t->pending, (t->num_pending + count + 1) *
                                               sizeof(*np))
                     : NULL;
  if (nf)
    t->folders = nf;
  if (np)
    t->pending = np;
  char *fpath = np ? strdup(folder) : NULL;
  if (!fpath) {
    for (size_t i = 0; i < count; ++i)
      free(names[i]);
    free(names);
    return oom();
  }
  size_t fi = t->num_folders++;
  t->folders[fi] = (folder_t){.path = fpath,
                              .check_trust = t->check_trust,
                              .require_signed = t->require_signed,
                              .trusted = t->trusted};
  if (count)
    qsort(names, count, sizeof(*names), compare_names);
  pthread_mutex_lock(&t->lock);
  for (size_t i = 0; i < count; ++i) {
    pending_t p = {.folder = fi, .name = names[i], .seq = t->next_seq++};
    if (name_prefix(names[i], p.prefix)) {
      unsigned b = bucket_of(p.prefix); /* read on first use of its key */
      t->pending[t->num_pending++] = p;
      if (t->pending_tail[b])
        t->pending[t->pending_tail[b] - 1].next = t->num_pending;
      else
        t->pending_head[b] = t->num_pending;
      t->pending_tail[b] = t->num_pending;
      ++t->unread;
    } else {
      load_one(t, fi, names[i], NULL, p.seq);
      free(names[i]);
    }
  }
  pthread_mutex_unlock(&t->lock);
  free(names);
  return LF_OK;
}

void lf_table_close(lf_table_t *table) {
  if (!table)
    return;
  for (size_t b = 0; b < BUCKETS; ++b) {
    entry_t *e = table->buckets[b];
    while (e) {
      entry_t *next = e->next;
      entry_free(e);
      e = next;
    }
  }
  for (size_t i = 0; i < table->num_pending; ++i)
    free(table->pending[i].name);
  free(table->pending);
  for (size_t i = 0; i < table->num_folders; ++i)
    free(table->folders[i].path);
  free(table->folders);
  for (size_t i = 0; i < table->num_index; ++i) {
    free(table->index_keys[i]);
    free(table->index_texts[i]);
  }
  free(table->index_keys);
  free(table->index_texts);
  pthread_mutex_destroy(&table->lock);
  free(table);
}

size_t lf_table_size(const lf_table_t *table) {
  if (!table)
    return 0;
  lf_table_t *t = (lf_table_t *)table;
  pthread_mutex_lock(&t->lock);
  size_t n = t->count + t->unread;
  pthread_mutex_unlock(&t->lock);
  return n;
}

size_t lf_table_skipped(const lf_table_t *table) {
  if (!table)
    return 0;
  lf_table_t *t = (lf_table_t *)table;
  pthread_mutex_lock(&t->lock);
  size_t n = t->skipped;
  pthread_mutex_unlock(&t->lock);
  return n;
}

void lf_table_match_clear(lf_table_match_t *match) {
  free(match->text);
  memset(match, 0, sizeof(*match));
}

static bool has_arch(const entry_t *e, const char *arch) {
  for (size_t i = 0; i < e->num_archs; ++i)
    if (strcmp(e->archs[i], arch) == 0)
      return true;
  return false;
}

/* Whether `arch` runs a kernel of one of `e`'s archs that is older and
 * unsuffixed (an sm_80 entry on sm_90; an sm_90a one only on sm_90a). */
static bool runs_older(const entry_t *e, const char *arch) {
  if (strncmp(arch, "sm_", 3) != 0)
    return false;
  int want = atoi(arch + 3);
  for (size_t i = 0; i < e->num_archs; ++i) {
    const char *a = e->archs[i];
    size_t n = strlen(a);
    if (strncmp(a, "sm_", 3) == 0 && n > 3 && isdigit((unsigned char)a[n - 1]) &&
        atoi(a + 3) <= want)
      return true;
  }
  return false;
}

/* Replaces each "// llm-fuse.template-size SK" line (the rest of the line
 * ignored) by "// llm-fuse.tune SK = <size>", keeping indent and lines. */
bool lf_table_is_template(const char *text) {
  return text && strstr(text, MARK) != NULL;
}

lf_status_t lf_table_bind_sizes(const char *text, const int64_t *sizes,
                                size_t count, lf_strbuf_t *out) {
  const char *p = text;
  lf_status_t st = LF_OK;
  while (!st && *p) {
    const char *eol = strchr(p, '\n');
    size_t n = eol ? (size_t)(eol - p) : strlen(p);
    const char *s = p;
    while (s < p + n && (*s == ' ' || *s == '\t'))
      ++s;
    size_t ml = sizeof(MARK) - 1;
    if ((size_t)(p + n - s) > ml && memcmp(s, MARK, ml) == 0) {
      const char *k = s + ml;
      unsigned idx = 0;
      if (k[0] != 'S' || sscanf(k + 1, "%u", &idx) != 1 || idx >= count)
        return LF_STATUS(LF_STATUS_DATA_LOSS,
                         "template: a template-size line names no bound "
                         "size S0..S%zu",
                         count ? count - 1 : 0);
      st = lf_strbuf_append(out, p, (size_t)(s - p));
      if (!st)
        st = lf_strbuf_appendf(out, "// llm-fuse.tune S%u = %lld", idx,
                               (long long)sizes[idx]);
    } else {
      st = lf_strbuf_append(out, p, n);
    }
    if (!st && eol)
      st = lf_strbuf_append_str(out, "\n");
    p = eol ? eol + 1 : p + n;
  }
  return st;
}

/* Why `e` refuses `sizes` (S0..S<count-1>) into `reason` ("" when it
 * admits them); when it admits them, its text with the sizes bound is left
 * in `bound`. */
static void entry_refusal(const entry_t *e, const int64_t *sizes, size_t count,
                          lf_strbuf_t *bound, char *reason, size_t size) {
  reason[0] = '\0';
  if (e->num_sizes != count)
    snprintf(reason, size, "the subgraph binds %zu size(s), the template %zu",
             count, e->num_sizes);
  for (size_t i = 0; !reason[0] && i < count; ++i)
    if (e->fixed[i] >= 0 && e->fixed[i] != sizes[i])
      snprintf(reason, size, "S%zu = %lld, the template is for S%zu = %lld", i,
               (long long)sizes[i], i, (long long)e->fixed[i]);
  for (size_t i = 0; !reason[0] && i < count; ++i)
    if (sizes[i] < 1 || sizes[i] > 2147483647LL)
      snprintf(reason, size, "S%zu = %lld is out of range", i,
               (long long)sizes[i]);
  if (reason[0])
    return;
  lf_status_t st = lf_table_bind_sizes(e->template_text, sizes, count, bound);
  lf_tune_set_t *set = NULL;
  if (!st)
    st = lf_tune_expand(bound->data, bound->len, &set);
  lf_tune_set_destroy(set);
  if (!st)
    return;
  /* Name the requirements themselves, with the sizes bound. */
  char reqs[256] = "";
  size_t rl = 0;
  const char *q = bound->data ? bound->data : "";
  while ((q = strstr(q, "llm-fuse.tune-require ")) && rl < 200) {
    q += strlen("llm-fuse.tune-require ");
    size_t n = strcspn(q, "\n");
    rl += (size_t)snprintf(reqs + rl, sizeof(reqs) - rl, "%s'%.*s'",
                           rl ? ", " : "", (int)(n > 80 ? 80 : n), q);
    if (rl >= sizeof(reqs))
      rl = sizeof(reqs) - 1;
  }
  char bound_sizes[128] = "";
  size_t bl = 0;
  for (size_t i = 0; i < count && bl < sizeof(bound_sizes) - 24; ++i)
    bl += (size_t)snprintf(bound_sizes + bl, sizeof(bound_sizes) - bl,
                           "%sS%zu = %lld", i ? ", " : "", i,
                           (long long)sizes[i]);
  snprintf(reason, size, "%s%s%s (with %s)", lf_status_message(st),
           reqs[0] ? "; requirement(s) " : "", reqs, bound_sizes);
  lf_status_free(st);
  if (!reason[0])
    snprintf(reason, size, "refused");
}

/* Whether a request in `precision` ("" exact, "tf32") may use `e`, and in
 * which round: exact requests see exact entries (round 1); tf32 requests
 * see the tf32 entries (round 0), then the exact ones (round 1). */
static bool entry_serves(const entry_t *e, const char *precision, int round) {
  if (round == 0)
    return precision[0] && strcmp(e->precision, precision) == 0;
  return !e->precision[0];
}

lf_status_t lf_table_instantiate_precision(const lf_table_t *table,
                                           const char *pattern,
                                           const char *arch,
                                           const char *precision,
                                           const int64_t *sizes, size_t count,
                                           lf_table_match_t *out) {
  return lf_table_instantiate_nth(table, pattern, arch, precision, sizes, count,
                                  0, out);
}

static lf_status_t instantiate_nth(const lf_table_t *table,
                                   const char *pattern, const char *arch,
                                   const char *precision,
                                   const int64_t *sizes, size_t count,
                                   size_t skip, lf_table_match_t *out) {
  if (!precision)
    precision = "";
  lf_strbuf_t why;
  lf_strbuf_init(&why, 4096);
  size_t seen = 0, admitted = 0;
  /* The bucket is in specificity order (lf_table_add_dir). */
  for (int round = precision[0] ? 0 : 1; round < 2; ++round)
    for (const entry_t *e = table->buckets[bucket_of(pattern)]; e;
         e = e->next) {
      if (strcmp(e->pattern, pattern) != 0 || !has_arch(e, arch) ||
          !entry_serves(e, precision, round))
        continue;
      ++seen;
      char reason[512];
      lf_strbuf_t bound;
      lf_strbuf_init(&bound, LF_TABLE_MAX_ENTRY_BYTES + 65536);
      entry_refusal(e, sizes, count, &bound, reason, sizeof(reason));
      if (!reason[0] && admitted++ >= skip) {
        out->text = lf_strbuf_take(&bound);
        snprintf(out->id, sizeof(out->id), "%s", e->id);
        snprintf(out->source, sizeof(out->source), "%s", e->source);
        snprintf(out->precision, sizeof(out->precision), "%s", e->precision);
        out->rank = admitted;
        lf_strbuf_free(&why);
        return out->text ? LF_OK : oom();
      }
      lf_strbuf_free(&bound);
      if (reason[0])
        lf_strbuf_appendf(&why, "%s%s: %s", why.len ? "; " : "", e->id, reason);
    }
  lf_status_t st =
      admitted ? LF_STATUS(LF_STATUS_OUT_OF_RANGE,
                           "%zu of the pattern table's %zu template(s) for "
                           "this pattern admit these sizes; none after the "
                           "first %zu",
                           admitted, seen, skip)
      : seen   ? LF_STATUS(LF_STATUS_FAILED_PRECONDITION,
                             "the pattern table's %zu template(s) for this "
                             "pattern refuse these sizes: %s",
                           seen, why.data ? why.data : "")
               : LF_STATUS(LF_STATUS_NOT_FOUND,
                           "no template for pattern %.16s on %s%s%s", pattern,
                           arch, precision[0] ? " in precision " : "", precision);
  lf_strbuf_free(&why);
  return st;
}

lf_status_t lf_table_instantiate_nth(const lf_table_t *table,
                                     const char *pattern, const char *arch,
                                     const char *precision,
                                     const int64_t *sizes, size_t count,
                                     size_t skip, lf_table_match_t *out) {
  memset(out, 0, sizeof(*out));
  if (!table || !pattern || !lf_sha256_is_hex(pattern) || !arch)
    return LF_STATUS(LF_STATUS_NOT_FOUND, "no pattern key");
  lf_table_t *t = lock_and_read(table, pattern);
  lf_status_t st =
      instantiate_nth(t, pattern, arch, precision, sizes, count, skip, out);
  pthread_mutex_unlock(&t->lock);
  return st;
}

lf_status_t lf_table_instantiate(const lf_table_t *table, const char *pattern,
                                 const char *arch, const int64_t *sizes,
                                 size_t count, lf_table_match_t *out) {
  return lf_table_instantiate_precision(table, pattern, arch, NULL, sizes,
                                        count, out);
}

/* How far `e`'s fixed sizes are from `sizes`: how many differ, then the sum
 * of max(fixed, size) / min(fixed, size) over those. */
static void entry_distance(const entry_t *e, const int64_t *sizes, size_t count,
                           size_t *out_differ, double *out_ratio) {
  *out_differ = e->num_sizes == count ? 0 : LF_TABLE_MAX_SIZES + 1;
  *out_ratio = 0;
  for (size_t i = 0; i < count && i < e->num_sizes; ++i) {
    if (e->fixed[i] < 0 || e->fixed[i] == sizes[i])
      continue;
    ++*out_differ;
    double a = (double)e->fixed[i], b = sizes[i] > 0 ? (double)sizes[i] : 1;
    *out_ratio += a > b ? a / b : b / a;
  }
}

lf_status_t lf_table_nearest(const lf_table_t *table, const char *pattern,
                             const char *arch, const int64_t *sizes,
                             size_t count, const char *id,
                             lf_table_nearest_t *out) {
  return lf_table_nearest_precision(table, pattern, arch, NULL, sizes, count,
                                    id, out);
}

static lf_status_t nearest(const lf_table_t *table, const char *pattern,
                           const char *arch, const char *precision,
                           const int64_t *sizes, size_t count, const char *id,
                           lf_table_nearest_t *out) {
  if (!precision)
    precision = "";
  const entry_t *best = NULL;
  int best_rank = 0;
  size_t best_differ = 0;
  double best_ratio = 0;
  char best_reason[512] = "";
  /* The bucket is in specificity order: among equals, the first wins.
   * Entries for `arch` come first; then (without `id`) those for an older
   * unsuffixed arch that `arch` runs, whatever their sizes, since the
   * lookup serves exact archs only. */
  for (const entry_t *e = table->buckets[bucket_of(pattern)]; e; e = e->next) {
    int rank = has_arch(e, arch) ? 0 : !id && runs_older(e, arch) ? 1 : -1;
    if (strcmp(e->pattern, pattern) != 0 || rank < 0 ||
        !(entry_serves(e, precision, 0) || entry_serves(e, precision, 1)))
      continue;
    if (id && strcmp(e->id, id) != 0)
      continue;
    char reason[512];
    lf_strbuf_t bound;
    lf_strbuf_init(&bound, LF_TABLE_MAX_ENTRY_BYTES + 65536);
    entry_refusal(e, sizes, count, &bound, reason, sizeof(reason));
    lf_strbuf_free(&bound);
    if (rank == 0 && !id && !reason[0])
      continue; /* it admits the sizes: nothing to adapt */
    if (rank == 1) {
      char was[400];
      snprintf(was, sizeof(was), "%.399s", reason);
      snprintf(reason, sizeof(reason), "it was verified for %.16s%s, not %.16s%s%s",
               e->archs[0], e->num_archs > 1 ? " and others" : "", arch,
               was[0] ? "; " : "", was);
    }
    size_t differ;
    double ratio;
    entry_distance(e, sizes, count, &differ, &ratio);
    if (!best || rank < best_rank ||
        (rank == best_rank &&
         (differ < best_differ ||
          (differ == best_differ && ratio < best_ratio)))) {
      best = e, best_rank = rank, best_differ = differ, best_ratio = ratio;
      snprintf(best_reason, sizeof(best_reason), "%s", reason);
    }
    if (id)
      break;
  }
  if (!best)
    return LF_STATUS(LF_STATUS_NOT_FOUND,
                     "no %sentry for pattern %.16s on %s%s%s",
                     id ? "" : "refusing ", pattern, arch, id ? " named " : "",
                     id ? id : "");
  out->template_text = strdup(best->template_text);
  if (!out->template_text)
    return oom();
  snprintf(out->id, sizeof(out->id), "%s", best->id);
  snprintf(out->source, sizeof(out->source), "%s", best->source);
  snprintf(out->reason, sizeof(out->reason), "%s", best_reason);
  out->num_sizes = best->num_sizes;
  for (size_t i = 0; i < best->num_sizes; ++i)
    out->fixed[i] = best->fixed[i];
  return LF_OK;
}

lf_status_t lf_table_nearest_precision(const lf_table_t *table,
                                       const char *pattern, const char *arch,
                                       const char *precision,
                                       const int64_t *sizes, size_t count,
                                       const char *id,
                                       lf_table_nearest_t *out) {
  memset(out, 0, sizeof(*out));
  if (!table || !pattern || !lf_sha256_is_hex(pattern) || !arch)
    return LF_STATUS(LF_STATUS_NOT_FOUND, "no pattern key");
  lf_table_t *t = lock_and_read(table, pattern);
  lf_status_t st = nearest(t, pattern, arch, precision, sizes, count, id, out);
  pthread_mutex_unlock(&t->lock);
  return st;
}

void lf_table_nearest_clear(lf_table_nearest_t *nearest) {
  if (!nearest)
    return;
  free(nearest->template_text);
  memset(nearest, 0, sizeof(*nearest));
}

void lf_table_foreach(const lf_table_t *table,
                      bool (*fn)(const lf_table_info_t *info, void *user),
                      void *user) {
  if (!table)
    return;
  lf_table_t *t = lock_and_read(table, NULL);
  for (const entry_t *e = t->first; e; e = e->order) {
    lf_table_info_t info = {.pattern = e->pattern,
                            .klass = e->klass,
                            .archs = (const char *const *)e->archs,
                            .num_archs = e->num_archs,
                            .fixed = e->fixed,
                            .num_sizes = e->num_sizes,
                            .id = e->id,
                            .path = e->path,
                            .source = e->source,
                            .template_text = e->template_text,
                            .precision = e->precision,
                            .signed_by = e->signed_by};
    if (!fn(&info, user))
      break;
  }
  pthread_mutex_unlock(&t->lock);
}

/* Sets the "signature" member of an entry's JSON (replacing one). */
static lf_status_t add_signature(cJSON *root, const char *pattern,
                                 const char *checksum,
                                 const lf_signer_t *signer) {
  char msg[256];
  int n = signed_message(pattern, checksum, msg, sizeof(msg));
  unsigned char sig[LF_SIGN_BYTES];
  LF_RETURN_IF_ERROR(lf_signer_sign(signer, msg, (size_t)n, sig));
  char *value = lf_base64_encode(sig, sizeof(sig));
  cJSON_DeleteItemFromObjectCaseSensitive(root, "signature");
  cJSON *o = value ? cJSON_AddObjectToObject(root, "signature") : NULL;
  bool ok = o && cJSON_AddStringToObject(o, "alg", "ed25519") &&
            cJSON_AddStringToObject(o, "key", lf_signer_key_id(signer)) &&
            cJSON_AddStringToObject(o, "value", value);
  free(value);
  return ok ? LF_OK : oom();
}

lf_status_t lf_table_sign_entry(const char *origin, const char *data,
                                size_t len, const lf_signer_t *signer,
                                char **out_text) {
  *out_text = NULL;
  const char *base = strrchr(origin, '/');
  entry_t *e = NULL;
  LF_RETURN_IF_ERROR(
      parse_entry(origin, base ? base + 1 : origin, data, len, &e));
  cJSON *root = cJSON_ParseWithLength(data, len);
  lf_status_t st =
      root ? add_signature(root, e->pattern, e->checksum, signer) : oom();
  entry_free(e);
  char *text = st ? NULL : cJSON_Print(root);
  cJSON_Delete(root);
  if (st)
    return st;
  if (!text)
    return oom();
  *out_text = strdup(text);
  cJSON_free(text);
  return *out_text ? LF_OK : oom();
}

lf_status_t lf_table_write_entry(const char *dir,
                                 const lf_table_new_entry_t *in,
                                 char **out_path) {
  return lf_table_write_entry_signed(dir, in, NULL, out_path);
}

lf_status_t lf_table_write_entry_signed(const char *dir,
                                        const lf_table_new_entry_t *in,
                                        const lf_signer_t *signer,
                                        char **out_path) {
  if (out_path)
    *out_path = NULL;
  if (!lf_sha256_is_hex(in->pattern) || !in->arch || !in->klass ||
      !in->template_text || in->num_sizes > LF_TABLE_MAX_SIZES || !in->name ||
      !in->name[0])
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "table entry: bad fields");
  for (const char *p = in->name; *p; ++p)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "table entry: bad file name part");
  entry_t e;
  memset(&e, 0, sizeof(e));
  memcpy(e.pattern, in->pattern, 65);
  char *arch = (char *)in->arch;
  e.archs = &arch;
  e.num_archs = 1;
  for (size_t i = 0; i < in->num_sizes; ++i)
    e.fixed[i] = in->fixed[i] < 0 ? -1 : in->fixed[i];
  e.num_sizes = in->num_sizes;
  e.template_text = (char *)in->template_text;
  if (in->precision && *in->precision) {
    if (strcmp(in->precision, "tf32") != 0)
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "table entry: precision is not tf32");
    snprintf(e.precision, sizeof(e.precision), "%s", in->precision);
  }
  char sum[LF_SHA256_HEX_SIZE];
  LF_RETURN_IF_ERROR(entry_checksum(&e, in->klass, sum));
  cJSON *root = cJSON_CreateObject();
  cJSON *archs = cJSON_CreateArray();
  cJSON *sizes = cJSON_CreateObject();
  bool ok = root && archs && sizes;
  if (ok) {
    cJSON_AddStringToObject(root, "schema", LF_TABLE_ENTRY_SCHEMA);
    cJSON_AddStringToObject(root, "pattern", in->pattern);
    cJSON_AddItemToArray(archs, cJSON_CreateString(in->arch));
    cJSON_AddItemToObject(root, "archs", archs);
    cJSON_AddStringToObject(root, "class", in->klass);
    for (size_t i = 0; i < in->num_sizes; ++i) {
      char k[24];
      snprintf(k, sizeof(k), "S%zu", i);
      if (in->fixed[i] < 0)
        cJSON_AddNullToObject(sizes, k);
      else
        cJSON_AddNumberToObject(sizes, k, (double)in->fixed[i]);
    }
    cJSON_AddItemToObject(root, "sizes", sizes);
    if (e.precision[0])
      cJSON_AddStringToObject(root, "precision", e.precision);
    cJSON_AddStringToObject(root, "template", in->template_text);
    cJSON_AddStringToObject(root, "source", in->source ? in->source : "?");
    char cs[80];
    snprintf(cs, sizeof(cs), "sha256:%s", sum);
    cJSON_AddStringToObject(root, "checksum", cs);
  } else {
    cJSON_Delete(archs);
    cJSON_Delete(sizes);
  }
  if (ok && signer) {
    lf_status_t ss = add_signature(root, in->pattern, sum, signer);
    if (ss) {
      cJSON_Delete(root);
      return ss;
    }
  }
  char *text = ok ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  if (!text)
    return oom();
  lf_strbuf_t path;
  lf_strbuf_init(&path, 4400);
  lf_status_t st = lf_strbuf_appendf(&path, "%s/v1", dir);
  if (!st)
    st = lf_make_dirs(path.data);
  if (!st)
    st = lf_strbuf_appendf(&path, "/%.16s-%s.json", in->pattern, in->name);
  if (!st)
    st = lf_write_file_atomic(path.data, text, strlen(text));
  cJSON_free(text);
  if (!st && out_path)
    *out_path = lf_strbuf_take(&path);
  lf_strbuf_free(&path);
  return st;
}

/* ---- Coincident sizes (lf_table_coincident) ---------------------------- */

bool lf_table_has_pattern(const lf_table_t *table, const char *pattern,
                          const char *arch) {
  if (!table || !pattern || !arch)
    return false;
  lf_table_t *t = lock_and_read(table, pattern);
  bool found = false;
  for (const entry_t *e = t->buckets[bucket_of(pattern)]; e && !found;
       e = e->next)
    found = strcmp(e->pattern, pattern) == 0 &&
            (has_arch(e, arch) || runs_older(e, arch));
  pthread_mutex_unlock(&t->lock);
  return found;
}

#define INDEX_SCHEMA "llm-fuse-table-patterns/1"
#define INDEX_MAX_BYTES ((size_t)256 << 20)

/* Reads one folder's index (<dir>/patterns.json.gz beside <dir>/v1); a
 * missing file adds nothing, an unreadable one is skipped with a warning,
 * a text that does not hash to its key is dropped (counted). Called with
 * the lock held. */
static void read_index_file(lf_table_t *t, const char *folder) {
  char path[4200];
  size_t n = strlen(folder);
  if (n >= 3 && strcmp(folder + n - 3, "/v1") == 0)
    n -= 3;
  snprintf(path, sizeof(path), "%.*s/patterns.json.gz", (int)n, folder);
  if (access(path, R_OK) != 0)
    return; /* no index in this folder */
  lf_strbuf_t raw, text;
  lf_strbuf_init(&raw, INDEX_MAX_BYTES);
  lf_strbuf_init(&text, INDEX_MAX_BYTES);
  lf_status_t st = lf_read_file(path, &raw);
  if (!st)
    st = gunzip(path, &raw, &text);
  lf_strbuf_free(&raw);
  cJSON *root = st ? NULL : cJSON_Parse(lf_strbuf_cstr(&text));
  lf_strbuf_free(&text);
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
  const cJSON *pats = cJSON_GetObjectItemCaseSensitive(root, "patterns");
  if (st || !cJSON_IsString(schema) ||
      strcmp(schema->valuestring, INDEX_SCHEMA) != 0 || !cJSON_IsObject(pats)) {
    LF_LOG_WARN("pattern table: %s: not a pattern index (%s); coincident "
                "sizes get no template from it",
                path, st ? lf_status_message(st) : "schema");
    lf_status_free(st);
    cJSON_Delete(root);
    return;
  }
  const cJSON *p;
  cJSON_ArrayForEach(p, pats) {
    char digest[LF_SHA256_HEX_SIZE];
    if (!cJSON_IsString(p) || !p->string ||
        lf_sha256_hex(p->valuestring, strlen(p->valuestring), digest) ||
        strcmp(digest, p->string) != 0) {
      ++t->index_skipped; /* forged or stale: its text is not its key's */
      continue;
    }
    char **k = realloc(t->index_keys, (t->num_index + 1) * sizeof(*k));
    if (k)
      t->index_keys = k;
    char **x = realloc(t->index_texts, (t->num_index + 1) * sizeof(*x));
    if (x)
      t->index_texts = x;
    char *ks = k && x ? strdup(p->string) : NULL;
    char *xs = ks ? strdup(p->valuestring) : NULL;
    if (!xs) {
      free(ks);
      break;
    }
    t->index_keys[t->num_index] = ks;
    t->index_texts[t->num_index++] = xs;
  }
  if (t->index_skipped)
    LF_LOG_WARN("pattern table: %s: %zu pattern text(s) do not hash to "
                "their key; ignored",
                path, t->index_skipped);
  cJSON_Delete(root);
}

/* A size symbol of an abstracted text at s[i]: S<k> after one of the
 * characters passes/pattern.c writes before a size (a tensor type's '<' or
 * 'x', an array's ' ' or '[', a reciprocal's '/'). Its index and length. */
static bool symbol_at(const char *s, size_t i, long *k, size_t *len) {
  if (s[i] != 'S' || !isdigit((unsigned char)s[i + 1]) ||
      (i > 0 && !strchr("<x :[,/(", s[i - 1])))
    return false;
  size_t j = i + 1;
  long v = 0;
  while (isdigit((unsigned char)s[j]) && v < 100000)
    v = v * 10 + (s[j++] - '0');
  *k = v;
  *len = j - i;
  return true;
}

/* Whether `text` is `general` with some symbols merged: walks both, equal
 * outside symbols, each symbol of `general` always meeting the same symbol
 * of `text`. map[a] is then the symbol of `text` that general's a became;
 * *num_general how many symbols general has (every one must occur). */
static bool unify(const char *general, const char *text, long *map,
                  size_t max_map, size_t *num_general) {
  for (size_t a = 0; a < max_map; ++a)
    map[a] = -1;
  size_t i = 0, j = 0, seen = 0;
  while (general[i] && text[j]) {
    long a, b;
    size_t la, lb;
    bool ga = symbol_at(general, i, &a, &la), tb = symbol_at(text, j, &b, &lb);
    if (ga != tb)
      return false;
    if (ga) {
      if (a < 0 || (size_t)a >= max_map || (map[a] >= 0 && map[a] != b))
        return false;
      if (map[a] < 0)
        map[a] = b, seen = (size_t)a + 1 > seen ? (size_t)a + 1 : seen;
      i += la, j += lb;
      continue;
    }
    if (general[i] != text[j])
      return false;
    ++i, ++j;
  }
  if (general[i] || text[j])
    return false;
  for (size_t a = 0; a < seen; ++a)
    if (map[a] < 0)
      return false;
  *num_general = seen;
  return true;
}

lf_status_t lf_table_coincident(const lf_table_t *table, const char *text,
                                const int64_t *sizes, size_t count,
                                const char *arch, char out_key[65],
                                int64_t *out_sizes, size_t *out_count) {
  if (!table || !text || !arch)
    return LF_STATUS(LF_STATUS_NOT_FOUND, "no pattern table");
  lf_table_t *t = (lf_table_t *)table;
  pthread_mutex_lock(&t->lock);
  if (!t->index_read) {
    t->index_read = true;
    for (size_t f = 0; f < t->num_folders; ++f)
      read_index_file(t, t->folders[f].path);
  }
  pthread_mutex_unlock(&t->lock);
  long map[LF_TABLE_MAX_SIZES];
  size_t best = (size_t)-1, best_syms = 0;
  int64_t best_sizes[LF_TABLE_MAX_SIZES];
  for (size_t i = 0; i < t->num_index; ++i) {
    size_t syms = 0;
    if (!unify(t->index_texts[i], text, map, LF_TABLE_MAX_SIZES, &syms) ||
        syms <= count)
      continue; /* not this pattern, or no symbol merged (its own key) */
    bool ok = true;
    for (size_t a = 0; a < syms && ok; ++a)
      ok = (size_t)map[a] < count;
    if (!ok)
      continue;
    if (best != (size_t)-1 &&
        (syms > best_syms ||
         (syms == best_syms && strcmp(t->index_keys[i],
                                      t->index_keys[best]) > 0)))
      continue;
    if (!lf_table_has_pattern(table, t->index_keys[i], arch))
      continue;
    best = i, best_syms = syms;
    for (size_t a = 0; a < syms; ++a)
      best_sizes[a] = sizes[map[a]];
  }
  if (best == (size_t)-1)
    return LF_STATUS(LF_STATUS_NOT_FOUND,
                     "no pattern of the table's index is this one at "
                     "distinct sizes");
  snprintf(out_key, 65, "%s", t->index_keys[best]);
  for (size_t a = 0; a < best_syms; ++a)
    out_sizes[a] = best_sizes[a];
  *out_count = best_syms;
  return LF_OK;
}
