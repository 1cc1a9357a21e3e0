/* cache_test.c - unit tests for llm_client/cache: keys, entry files,
 * corruption handling, atomic writes, the secret guard and the walk. */
#include "llm_client/cache.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/sha256.h"
#include "base/testing.h"

#define FP_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define FP_B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define KERNEL                                                                 \
  "gpu.module @k {\n  gpu.func @f() kernel {\n    gpu.return\n  }\n}\n"

static char tmp_root[256];

static const lf_cache_key_t key_a = {
    FP_A, "sm_90a", "llvm-22.1.8;ptxas-13.0", "openai", "gpt-4.1", "p1", NULL};

/* ---- Helpers -------------------------------------------------------------*/

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

/* A fresh empty folder under the test's temp root. */
static const char *fresh_dir(const char *name) {
  static char path[512];
  snprintf(path, sizeof(path), "%s/%s", tmp_root, name);
  nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  return path;
}

static lf_cache_t *open_cache(const char *dir) {
  lf_cache_t *c = NULL;
  lf_status_t s = lf_cache_open(dir, NULL, &c);
  LF_EXPECT(s == LF_OK);
  lf_status_free(s);
  return c;
}

static lf_cache_entry_t sample_entry(void) {
  static unsigned char cubin[] = {0x7f, 'E', 'L', 'F', 0, 1, 2, 0xff, 0xfe};
  lf_cache_entry_t e = {0};
  e.kernel = KERNEL;
  e.ptx = ".version 8.7\n.target sm_90a\n";
  e.cubin = cubin;
  e.cubin_len = sizeof(cubin);
  e.verdict = LF_CACHE_VERIFIED;
  e.verification_json = "{\"trials\":5,\"max_abs_error\":1.5e-07,"
                        "\"kernel_us\":12.25,\"fallback_us\":30}";
  e.provenance.created = 1700000000; /* 2023-11-14T22:13:20Z */
  e.provenance.attempts = 2;
  return e;
}

static void store_ok(lf_cache_t *c, const lf_cache_key_t *key,
                     const lf_cache_entry_t *e, char digest[65]) {
  lf_status_t s = lf_cache_store(c, key, e, digest);
  LF_EXPECT(s == LF_OK);
  if (s)
    fprintf(stderr, "  store: %s\n", lf_status_message(s));
  lf_status_free(s);
}

static char *entry_path(lf_cache_t *c, const char *digest) {
  lf_strbuf_t p;
  lf_strbuf_init(&p, 4096);
  lf_status_free(lf_cache_entry_path(c, digest, &p));
  return lf_strbuf_take(&p);
}

static char *slurp(const char *path, size_t *len) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, (size_t)1 << 30);
  lf_status_free(lf_read_file(path, &b));
  *len = b.len;
  return lf_strbuf_take(&b);
}

static void spew(const char *path, const char *data, size_t len) {
  FILE *f = fopen(path, "wb");
  LF_EXPECT(f != NULL);
  if (!f)
    return;
  fwrite(data, 1, len, f);
  fclose(f);
}

/* Looks `key` up and expects CORRUPT with DATA_LOSS whose message contains
 * `path` and `reason`, and no entry. */
static void expect_corrupt(lf_cache_t *c, const lf_cache_key_t *key,
                           const char *path, const char *reason) {
  lf_cache_entry_t *e = (lf_cache_entry_t *)1;
  lf_cache_outcome_t outcome = LF_CACHE_HIT;
  lf_status_t s = lf_cache_lookup(c, key, &e, &outcome);
  LF_EXPECT(outcome == LF_CACHE_CORRUPT);
  LF_EXPECT(e == NULL);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_DATA_LOSS);
  LF_EXPECT(strstr(lf_status_message(s), path) != NULL);
  LF_EXPECT(strstr(lf_status_message(s), reason) != NULL);
  if (!strstr(lf_status_message(s), reason))
    fprintf(stderr, "  message: %s\n  wanted:  %s\n", lf_status_message(s),
            reason);
  lf_status_free(s);
}

/* Parses bytes and expects DATA_LOSS mentioning `reason`. */
static void expect_parse_fails(const char *data, size_t len,
                               const char *reason) {
  lf_cache_entry_t *e = (lf_cache_entry_t *)1;
  lf_status_t s = lf_cache_entry_parse(data, len, NULL, "mem", &e);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_DATA_LOSS);
  LF_EXPECT(e == NULL);
  LF_EXPECT(strstr(lf_status_message(s), reason) != NULL);
  if (!strstr(lf_status_message(s), reason))
    fprintf(stderr, "  message: %s\n  wanted:  %s\n", lf_status_message(s),
            reason);
  lf_status_free(s);
}

/* Serializes the sample, replaces the first `from` with `to`. */
static char *sample_edited(const char *from, const char *to, size_t *len) {
  lf_cache_entry_t e = sample_entry();
  char *text = NULL;
  size_t n = 0;
  lf_status_free(lf_cache_entry_serialize(&key_a, &e, &text, &n));
  char *at = text ? strstr(text, from) : NULL;
  LF_EXPECT(at != NULL);
  if (!at) {
    *len = n;
    return text;
  }
  size_t fl = strlen(from), tl = strlen(to);
  char *out = malloc(n - fl + tl + 1);
  size_t pre = (size_t)(at - text);
  memcpy(out, text, pre);
  memcpy(out + pre, to, tl);
  memcpy(out + pre + tl, at + fl, n - pre - fl + 1);
  *len = n - fl + tl;
  free(text);
  return out;
}

/* ---- Keys ----------------------------------------------------------------*/

LF_TEST(digest_is_sha256_of_length_prefixed_fields) {
  const char *canon = "llm-fuse-cache-key/1\n"
                      "fingerprint=64:" FP_A "\n"
                      "arch=6:sm_90a\n"
                      "toolchain=22:llvm-22.1.8;ptxas-13.0\n"
                      "provider=6:openai\n"
                      "model=7:gpt-4.1\n"
                      "prompt_version=2:p1\n";
  char want[65], got[65];
  lf_status_free(lf_sha256_hex(canon, strlen(canon), want));
  lf_status_t s = lf_cache_key_digest(&key_a, got);
  LF_EXPECT(s == LF_OK);
  LF_EXPECT_STREQ(got, want);
  lf_status_free(s);
}

LF_TEST(digest_changes_with_every_field) {
  char base[65];
  lf_status_free(lf_cache_key_digest(&key_a, base));
  const char *alt[6] = {FP_B,     "sm_80",        "llvm-22.1.8;ptxas-12.8",
                        "replay", "gpt-4.1-mini", "p2"};
  for (int i = 0; i < 6; ++i) {
    lf_cache_key_t k = key_a;
    const char **f = (const char **)&k + i;
    *f = alt[i];
    char d[65];
    lf_status_t s = lf_cache_key_digest(&k, d);
    LF_EXPECT(s == LF_OK);
    LF_EXPECT(strcmp(d, base) != 0);
    lf_status_free(s);
  }
  /* Moving text between fields changes it too (no ambiguity). */
  lf_cache_key_t k1 = key_a, k2 = key_a;
  k1.provider = "open", k1.model = "aigpt";
  k2.provider = "openai", k2.model = "gpt";
  char d1[65], d2[65];
  lf_status_free(lf_cache_key_digest(&k1, d1));
  lf_status_free(lf_cache_key_digest(&k2, d2));
  LF_EXPECT(strcmp(d1, d2) != 0);
}

LF_TEST(bad_keys_are_refused) {
  char d[65];
  lf_cache_key_t k = key_a;
  k.fingerprint = "ABC";
  lf_status_t s = lf_cache_key_digest(&k, d);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(strstr(lf_status_message(s), "fingerprint") != NULL);
  lf_status_free(s);
  k = key_a;
  k.arch = "sm90";
  s = lf_cache_key_digest(&k, d);
  LF_EXPECT(strstr(lf_status_message(s), "arch 'sm90'") != NULL);
  lf_status_free(s);
  k = key_a;
  k.model = "a\nb";
  s = lf_cache_key_digest(&k, d);
  LF_EXPECT(strstr(lf_status_message(s), "'model'") != NULL);
  lf_status_free(s);
  k = key_a;
  k.prompt_version = NULL;
  s = lf_cache_key_digest(&k, d);
  LF_EXPECT(strstr(lf_status_message(s), "'prompt_version' is missing") !=
            NULL);
  lf_status_free(s);
}

/* TF32 mode (pass option tf32=1): the optional precision field. Absent
 * (NULL or "") it is not in the digest: every key of before is unchanged
 * (digest_is_sha256_of_length_prefixed_fields); "tf32" is one more line. */
LF_TEST(precision_is_an_optional_key_field) {
  const char *canon = "llm-fuse-cache-key/1\n"
                      "fingerprint=64:" FP_A "\n"
                      "arch=6:sm_90a\n"
                      "toolchain=22:llvm-22.1.8;ptxas-13.0\n"
                      "provider=6:openai\n"
                      "model=7:gpt-4.1\n"
                      "prompt_version=2:p1\n"
                      "precision=4:tf32\n";
  char want[65], got[65], exact[65], empty[65];
  lf_status_free(lf_sha256_hex(canon, strlen(canon), want));
  lf_cache_key_t k = key_a;
  k.precision = "tf32";
  lf_status_t s = lf_cache_key_digest(&k, got);
  LF_EXPECT(s == LF_OK);
  LF_EXPECT_STREQ(got, want);
  lf_status_free(s);
  lf_status_free(lf_cache_key_digest(&key_a, exact));
  LF_EXPECT(strcmp(got, exact) != 0);
  lf_cache_key_t ke = key_a;
  ke.precision = "";
  lf_status_free(lf_cache_key_digest(&ke, empty));
  LF_EXPECT_STREQ(empty, exact);
  k.precision = "fp8";
  s = lf_cache_key_digest(&k, got);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(s && strstr(lf_status_message(s), "precision 'fp8'") != NULL);
  lf_status_free(s);

  /* A TF32 entry round-trips and never answers the exact key. */
  lf_cache_t *c = open_cache(fresh_dir("tf32"));
  lf_cache_entry_t in = sample_entry();
  k.precision = "tf32";
  char digest[65];
  store_ok(c, &k, &in, digest);
  LF_EXPECT_STREQ(digest, want);
  lf_cache_entry_t *out = NULL;
  lf_cache_outcome_t outcome = LF_CACHE_MISS;
  s = lf_cache_lookup(c, &k, &out, &outcome);
  LF_EXPECT(s == LF_OK && outcome == LF_CACHE_HIT && out != NULL);
  if (out)
    LF_EXPECT(out->key.precision && !strcmp(out->key.precision, "tf32"));
  lf_cache_entry_free(out);
  lf_status_free(s);
  out = NULL;
  s = lf_cache_lookup(c, &key_a, &out, &outcome);
  LF_EXPECT(s == LF_OK && outcome == LF_CACHE_MISS && out == NULL);
  lf_status_free(s);
  lf_cache_close(c);
}

/* ---- Round trip ----------------------------------------------------------*/

LF_TEST(store_then_lookup_round_trips) {
  lf_cache_t *c = open_cache(fresh_dir("rt"));
  lf_cache_entry_t in = sample_entry();
  char digest[65], want[65];
  lf_status_free(lf_cache_key_digest(&key_a, want));

  lf_cache_entry_t *out = (lf_cache_entry_t *)1;
  lf_cache_outcome_t outcome = LF_CACHE_HIT;
  lf_status_t s = lf_cache_lookup(c, &key_a, &out, &outcome);
  LF_EXPECT(s == LF_OK && outcome == LF_CACHE_MISS && out == NULL);

  store_ok(c, &key_a, &in, digest);
  LF_EXPECT_STREQ(digest, want);
  s = lf_cache_lookup(c, &key_a, &out, &outcome);
  LF_EXPECT(s == LF_OK && outcome == LF_CACHE_HIT && out != NULL);
  if (out) {
    LF_EXPECT_STREQ(out->digest, want);
    LF_EXPECT_STREQ(out->key.fingerprint, FP_A);
    LF_EXPECT_STREQ(out->key.arch, "sm_90a");
    LF_EXPECT_STREQ(out->key.toolchain, "llvm-22.1.8;ptxas-13.0");
    LF_EXPECT_STREQ(out->key.provider, "openai");
    LF_EXPECT_STREQ(out->key.model, "gpt-4.1");
    LF_EXPECT_STREQ(out->key.prompt_version, "p1");
    LF_EXPECT_STREQ(out->kernel, KERNEL);
    LF_EXPECT_STREQ(out->ptx, in.ptx);
    LF_EXPECT(out->cubin_len == in.cubin_len &&
              memcmp(out->cubin, in.cubin, in.cubin_len) == 0);
    LF_EXPECT(out->verdict == LF_CACHE_VERIFIED);
    LF_EXPECT_STREQ(out->verification_json,
                    "{\"status\":\"verified\",\"trials\":5,"
                    "\"max_abs_error\":1.5e-07,\"kernel_us\":12.25,"
                    "\"fallback_us\":30}");
    LF_EXPECT_STREQ(out->provenance.provider, "openai");
    LF_EXPECT_STREQ(out->provenance.model, "gpt-4.1");
    LF_EXPECT_STREQ(out->provenance.prompt_version, "p1");
    LF_EXPECT_STREQ(out->provenance.tool_version, LF_CACHE_TOOL_VERSION);
    LF_EXPECT(out->provenance.created == 1700000000);
    LF_EXPECT(out->provenance.attempts == 2);
  }
  lf_status_free(s);

  /* The file is one line, with the time in UTC, and re-storing what was
   * read gives the same bytes. */
  char *path = entry_path(c, want);
  size_t n1 = 0, n2 = 0;
  char *b1 = slurp(path, &n1);
  LF_EXPECT(n1 > 0 && b1[n1 - 1] == '\n' && memchr(b1, '\n', n1 - 1) == NULL);
  LF_EXPECT(strstr(b1, "\"created\":\"2023-11-14T22:13:20Z\"") != NULL);
  LF_EXPECT(strstr(b1, "\"schema\":\"llm-fuse-cache-entry/1\"") == b1 + 1);
  if (out)
    store_ok(c, &out->key, out, digest);
  char *b2 = slurp(path, &n2);
  LF_EXPECT(n1 == n2 && memcmp(b1, b2, n1) == 0);
  free(b1);
  free(b2);
  free(path);
  lf_cache_entry_free(out);
  lf_cache_close(c);
}

LF_TEST(optional_parts_and_defaults) {
  lf_cache_t *c = open_cache(fresh_dir("opt"));
  lf_cache_entry_t in = {0};
  in.kernel = KERNEL; /* no ptx, no cubin, no record, created now */
  char digest[65];
  store_ok(c, &key_a, &in, digest);
  lf_cache_entry_t *out = NULL;
  lf_cache_outcome_t outcome;
  lf_status_t s = lf_cache_lookup(c, &key_a, &out, &outcome);
  LF_EXPECT(s == LF_OK && outcome == LF_CACHE_HIT);
  if (out) {
    LF_EXPECT(out->ptx == NULL && out->cubin == NULL && out->cubin_len == 0);
    LF_EXPECT(out->verdict == LF_CACHE_UNVERIFIED);
    LF_EXPECT_STREQ(out->verification_json, "{\"status\":\"unverified\"}");
    LF_EXPECT(out->provenance.created > 1700000000);
  }
  lf_status_free(s);
  lf_cache_entry_free(out);
  lf_cache_close(c);
}

LF_TEST(bad_entries_are_not_stored) {
  lf_cache_t *c = open_cache(fresh_dir("badstore"));
  lf_cache_entry_t e = sample_entry();
  e.verification_json = "{\"status\":\"rejected\"}"; /* verdict: verified */
  lf_status_t s = lf_cache_store(c, &key_a, &e, NULL);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  lf_status_free(s);
  e = sample_entry();
  e.verification_json = "[1]";
  s = lf_cache_store(c, &key_a, &e, NULL);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  lf_status_free(s);
  e = sample_entry();
  e.kernel = "";
  s = lf_cache_store(c, &key_a, &e, NULL);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  lf_status_free(s);
  e = sample_entry();
  e.provenance.attempts = -1;
  s = lf_cache_store(c, &key_a, &e, NULL);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_INVALID_ARGUMENT);
  lf_status_free(s);
  lf_cache_entry_t *out = NULL;
  lf_cache_outcome_t outcome;
  s = lf_cache_lookup(c, &key_a, &out, &outcome);
  LF_EXPECT(s == LF_OK && outcome == LF_CACHE_MISS);
  lf_status_free(s);
  lf_cache_close(c);
}

/* ---- Corruption ----------------------------------------------------------*/

LF_TEST(truncated_entry_is_corrupt) {
  lf_cache_t *c = open_cache(fresh_dir("trunc"));
  lf_cache_entry_t e = sample_entry();
  char digest[65];
  store_ok(c, &key_a, &e, digest);
  char *path = entry_path(c, digest);
  LF_EXPECT(truncate(path, 100) == 0);
  expect_corrupt(c, &key_a, path, "not JSON (parse error at byte");
  LF_EXPECT(truncate(path, 0) == 0);
  expect_corrupt(c, &key_a, path, "empty file");
  free(path);
  lf_cache_close(c);
}

LF_TEST(flipped_byte_is_corrupt) {
  lf_cache_t *c = open_cache(fresh_dir("flip"));
  lf_cache_entry_t e = sample_entry();
  char digest[65];
  store_ok(c, &key_a, &e, digest);
  char *path = entry_path(c, digest);
  size_t n;
  char *b = slurp(path, &n);
  char *at = strstr(b, "gpu.return");
  LF_EXPECT(at != NULL);
  at[0] ^= 0x20; /* 'g' -> 'G' in the kernel text */
  spew(path, b, n);
  expect_corrupt(c, &key_a, path, "checksum mismatch");
  /* A flipped checksum digit is a mismatch too. */
  at[0] ^= 0x20;
  at = strstr(b, "\"checksum\":\"sha256:") + 20;
  *at = *at == '0' ? '1' : '0';
  spew(path, b, n);
  expect_corrupt(c, &key_a, path, "checksum mismatch");
  /* A flipped key byte breaks the digest. */
  free(b);
  store_ok(c, &key_a, &e, digest);
  b = slurp(path, &n);
  at = strstr(b, "\"model\":\"gpt-4.1\"");
  at[10] = 'G';
  spew(path, b, n);
  expect_corrupt(c, &key_a, path, "is not the digest of the entry's key");
  free(b);
  free(path);
  lf_cache_close(c);
}

LF_TEST(entry_under_the_wrong_name_is_corrupt) {
  lf_cache_t *c = open_cache(fresh_dir("wrongkey"));
  lf_cache_entry_t e = sample_entry();
  lf_cache_key_t key_b = key_a;
  key_b.fingerprint = FP_B;
  char da[65], db[65];
  store_ok(c, &key_a, &e, da);
  store_ok(c, &key_b, &e, db);
  char *pa = entry_path(c, da), *pb = entry_path(c, db);
  size_t n;
  char *b = slurp(pa, &n);
  spew(pb, b, n); /* A's valid entry copied over B's name */
  expect_corrupt(c, &key_b, pb,
                 "holds the entry of another key (fingerprint '" FP_A
                 "', wanted '" FP_B "')");
  free(b);
  free(pa);
  free(pb);
  lf_cache_close(c);
}

LF_TEST(wrong_schema_non_json_and_huge_are_corrupt) {
  lf_cache_t *c = open_cache(fresh_dir("schema"));
  lf_cache_entry_t e = sample_entry();
  char digest[65];
  store_ok(c, &key_a, &e, digest);
  char *path = entry_path(c, digest);
  size_t n;
  char *b = slurp(path, &n);
  char *at = strstr(b, "entry/1");
  at[6] = '2';
  spew(path, b, n);
  expect_corrupt(c, &key_a, path,
                 "schema is 'llm-fuse-cache-entry/2', not "
                 "'llm-fuse-cache-entry/1'");
  spew(path, "hello, world\n", 13);
  expect_corrupt(c, &key_a, path, "not JSON (parse error at byte 0 of 13)");
  spew(path, "[1,2]\n", 6);
  expect_corrupt(c, &key_a, path, "not a JSON object");
  /* A 65 MiB sparse file: refused by size, unread. */
  int fd = open(path, O_WRONLY | O_TRUNC);
  LF_EXPECT(fd >= 0 && ftruncate(fd, (off_t)65 << 20) == 0);
  close(fd);
  expect_corrupt(c, &key_a, path, "more than the 64 MiB an entry may have");
  free(b);
  free(path);
  lf_cache_close(c);
}

LF_TEST(structural_defects_are_corrupt) {
  size_t n;
  char *t;
  t = sample_edited("\"ptx\":", "\"PTX\":", &n);
  expect_parse_fails(t, n, "entry has an unexpected member 'PTX'");
  free(t);
  t = sample_edited("\"attempts\":2", "\"attempts\":2.5", &n);
  expect_parse_fails(t, n, "attempts is not an integer");
  free(t);
  t = sample_edited("\"attempts\":2", "\"attempts\":\"2\"", &n);
  expect_parse_fails(t, n, "provenance member 'attempts' is not a number");
  free(t);
  t = sample_edited("2023-11-14T22:13:20Z", "2023-02-29T22:13:20Z", &n);
  expect_parse_fails(t, n, "is not a UTC time");
  free(t);
  t = sample_edited("\"cubin\":\"f0VMRgABAv/+\"", "\"cubin\":\"f0VMRgABAv/\"",
                    &n);
  expect_parse_fails(t, n, "cubin is not canonical base64");
  free(t);
  t = sample_edited("\"status\":\"verified\"", "\"status\":\"great\"", &n);
  expect_parse_fails(t, n, "verification status 'great'");
  free(t);
  t = sample_edited(",\"kernel\":", ",\"kernel\":\"x\",\"kernel\":", &n);
  expect_parse_fails(t, n, "member 'kernel' is repeated or out of order");
  free(t);
  t = sample_edited("{\"schema\"", "{ \"schema\"", &n); /* checksum holds */
  expect_parse_fails(t, n, "not in canonical form");
  free(t);
  t = sample_edited("}\n", "}\n\n", &n);
  expect_parse_fails(t, n, "not in canonical form");
  free(t);
}

LF_TEST(lookup_never_returns_a_corrupt_entry_as_a_hit) {
  /* Every single-byte truncation of a valid entry is refused. */
  lf_cache_entry_t e = sample_entry();
  char *text = NULL;
  size_t n = 0;
  lf_status_free(lf_cache_entry_serialize(&key_a, &e, &text, &n));
  int accepted = 0;
  for (size_t len = 0; len < n; ++len) {
    lf_cache_entry_t *out = NULL;
    lf_status_t s = lf_cache_entry_parse(text, len, &key_a, NULL, &out);
    accepted += s == LF_OK;
    lf_cache_entry_free(out);
    lf_status_free(s);
  }
  LF_EXPECT(accepted == 0);
  /* And every byte flipped in any one bit. */
  for (size_t i = 0; i + 1 < n; ++i)
    for (int bit = 0; bit < 8; ++bit) {
      text[i] ^= (char)(1 << bit);
      lf_cache_entry_t *out = NULL;
      lf_status_t s = lf_cache_entry_parse(text, n, &key_a, NULL, &out);
      accepted += s == LF_OK;
      if (s == LF_OK)
        fprintf(stderr, "  accepted a flip of bit %d of byte %zu\n", bit, i);
      lf_cache_entry_free(out);
      lf_status_free(s);
      text[i] ^= (char)(1 << bit);
    }
  LF_EXPECT(accepted == 0);
  free(text);
}

/* ---- Atomic writes and the secret guard ----------------------------------*/

static bool count_files(const lf_cache_file_t *f, void *user) {
  int *counts = user;
  ++counts[f->state];
  return true;
}

LF_TEST(atomic_writes_leave_no_temp_files) {
  const char *dir = fresh_dir("atomic");
  lf_cache_t *c = open_cache(dir);
  lf_cache_entry_t e = sample_entry();
  char digest[65];
  for (int i = 0; i < 5; ++i) {
    e.provenance.attempts = i;
    store_ok(c, &key_a, &e, digest);
  }
  char cmd[700];
  snprintf(cmd, sizeof(cmd),
           "test $(find '%s' -type f | wc -l) = 1 && "
           "test -z \"$(find '%s' -name '*.tmp.*')\"",
           dir, dir);
  LF_EXPECT(system(cmd) == 0);
  int counts[3] = {0, 0, 0};
  lf_status_t s = lf_cache_list(c, count_files, counts);
  LF_EXPECT(s == LF_OK && counts[0] == 1 && counts[1] == 0 && counts[2] == 0);
  lf_status_free(s);
  lf_cache_close(c);
}

LF_TEST(secret_guard_refuses_entries_holding_the_key) {
  const char *secret = "sk-test-0123456789abcdef";
  setenv("LF_CACHE_TEST_KEY", secret, 1);
  lf_cache_options_t o;
  lf_cache_options_init(&o);
  o.api_key_env = "LF_CACHE_TEST_KEY";
  const char *dir = fresh_dir("secret");
  lf_cache_t *c = NULL;
  lf_status_free(lf_cache_open(dir, &o, &c));
  LF_EXPECT(c != NULL);
  if (!c)
    return;
  char kernel[256], record[128];
  snprintf(kernel, sizeof(kernel), "// key: %s\n%s", secret, KERNEL);
  snprintf(record, sizeof(record), "{\"note\":\"Bearer %s\"}", secret);
  static unsigned char bin[64];
  memcpy(bin + 3, secret, strlen(secret));

  const char *fields[] = {"kernel", "verification record", "cubin", "model"};
  for (int i = 0; i < 4; ++i) {
    lf_cache_entry_t e = sample_entry();
    lf_cache_key_t k = key_a;
    if (i == 0)
      e.kernel = kernel;
    else if (i == 1)
      e.verification_json = record;
    else if (i == 2)
      e.cubin = bin, e.cubin_len = sizeof(bin);
    else
      k.model = secret;
    lf_status_t s = lf_cache_store(c, &k, &e, NULL);
    LF_EXPECT(lf_status_code(s) == LF_STATUS_PERMISSION_DENIED);
    LF_EXPECT(strstr(lf_status_message(s), fields[i]) != NULL);
    LF_EXPECT(strstr(lf_status_message(s), "$LF_CACHE_TEST_KEY") != NULL);
    LF_EXPECT(strstr(lf_status_message(s), secret) == NULL);
    lf_status_free(s);
  }
  int counts[3] = {0, 0, 0};
  lf_status_free(lf_cache_list(c, count_files, counts));
  LF_EXPECT(counts[0] + counts[1] + counts[2] == 0);

  /* store_raw applies the guard too. */
  lf_cache_t *plain = open_cache(fresh_dir("secret-src"));
  lf_cache_entry_t e = sample_entry();
  e.kernel = kernel;
  char *text = NULL;
  size_t n = 0;
  lf_status_free(lf_cache_entry_serialize(&key_a, &e, &text, &n));
  lf_status_t s = lf_cache_store_raw(c, text, n, "bundle:1", NULL, NULL);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_PERMISSION_DENIED);
  lf_status_free(s);
  free(text);
  lf_cache_close(plain);
  lf_cache_close(c);

  /* A too-short value is not searched for (it would match everything). */
  setenv("LF_CACHE_TEST_KEY", "gpu", 1);
  lf_status_free(lf_cache_open(dir, &o, &c));
  e = sample_entry();
  store_ok(c, &key_a, &e, NULL);
  lf_cache_close(c);
  unsetenv("LF_CACHE_TEST_KEY");
}

/* ---- Raw stores and the walk ---------------------------------------------*/

LF_TEST(store_raw_validates_and_skips_identical) {
  lf_cache_t *c = open_cache(fresh_dir("raw"));
  lf_cache_entry_t e = sample_entry();
  char *text = NULL;
  size_t n = 0;
  lf_status_free(lf_cache_entry_serialize(&key_a, &e, &text, &n));
  bool written = false;
  char digest[65];
  lf_status_t s = lf_cache_store_raw(c, text, n, "bundle:1", digest, &written);
  LF_EXPECT(s == LF_OK && written);
  lf_status_free(s);
  s = lf_cache_store_raw(c, text, n, "bundle:1", digest, &written);
  LF_EXPECT(s == LF_OK && !written);
  lf_status_free(s);
  text[n / 2] ^= 1;
  s = lf_cache_store_raw(c, text, n, "bundle:2", digest, &written);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_DATA_LOSS && !written);
  LF_EXPECT(strncmp(lf_status_message(s), "bundle:2: ", 10) == 0);
  lf_status_free(s);
  free(text);
  lf_cache_close(c);
}

typedef struct seen_s {
  int ok, corrupt, temp;
  char reasons[2048];
} seen_t;

static bool collect(const lf_cache_file_t *f, void *user) {
  seen_t *seen = user;
  if (f->state == LF_CACHE_FILE_OK) {
    ++seen->ok;
    LF_EXPECT(f->entry && strcmp(f->entry->digest, f->digest) == 0);
  } else if (f->state == LF_CACHE_FILE_TEMP) {
    ++seen->temp;
  } else {
    ++seen->corrupt;
    LF_EXPECT(f->entry == NULL && *f->reason);
    strncat(seen->reasons, f->reason,
            sizeof(seen->reasons) - strlen(seen->reasons) - 2);
    strcat(seen->reasons, "\n");
  }
  return true;
}

LF_TEST(list_reports_every_file_with_its_state) {
  const char *dir = fresh_dir("list");
  lf_cache_t *c = open_cache(dir);
  seen_t seen = {0};
  lf_status_t s = lf_cache_list(c, collect, &seen); /* no dir yet */
  LF_EXPECT(s == LF_OK && seen.ok + seen.corrupt + seen.temp == 0);
  lf_status_free(s);

  lf_cache_entry_t e = sample_entry();
  lf_cache_key_t key_b = key_a;
  key_b.fingerprint = FP_B;
  char da[65], db[65];
  store_ok(c, &key_a, &e, da);
  store_ok(c, &key_b, &e, db);
  char *pa = entry_path(c, da), *pb = entry_path(c, db);
  char extra[1024];
  /* A renamed copy: a valid entry under a name that is not its digest. */
  snprintf(extra, sizeof(extra), "%s/v1/%.2s/%.2s%s.json", dir, da, da,
           "00000000000000000000000000000000000000000000000000000000000000");
  size_t n;
  char *b = slurp(pa, &n);
  spew(extra, b, n);
  /* An interrupted write and a stray file. */
  snprintf(extra, sizeof(extra), "%s.tmp.AbC123", pb);
  spew(extra, "{", 1);
  snprintf(extra, sizeof(extra), "%s/v1/notes.txt", dir);
  spew(extra, "hi", 2);
  free(b);

  s = lf_cache_list(c, collect, &seen);
  LF_EXPECT(s == LF_OK);
  LF_EXPECT(seen.ok == 2 && seen.corrupt == 2 && seen.temp == 1);
  LF_EXPECT(strstr(seen.reasons, "is not the digest of the key") != NULL);
  LF_EXPECT(strstr(seen.reasons, "notes.txt: not a cache entry") != NULL);
  lf_status_free(s);

  s = lf_cache_remove(c, da);
  LF_EXPECT(s == LF_OK);
  lf_status_free(s);
  s = lf_cache_remove(c, da);
  LF_EXPECT(lf_status_code(s) == LF_STATUS_NOT_FOUND);
  lf_status_free(s);
  free(pa);
  free(pb);
  lf_cache_close(c);
}

LF_TEST(default_dir_follows_the_environment) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, 4096);
  setenv("LLM_FUSE_CACHE_DIR", "/x/cache", 1);
  lf_status_free(lf_cache_default_dir(&b));
  LF_EXPECT_STREQ(lf_strbuf_cstr(&b), "/x/cache");
  unsetenv("LLM_FUSE_CACHE_DIR");
  lf_strbuf_reset(&b);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  lf_status_free(lf_cache_default_dir(&b));
  LF_EXPECT_STREQ(lf_strbuf_cstr(&b), "/xdg/llm-fuse");
  lf_strbuf_reset(&b);
  setenv("XDG_CACHE_HOME", "relative", 1); /* ignored, per the XDG spec */
  setenv("HOME", "/home/u", 1);
  lf_status_free(lf_cache_default_dir(&b));
  LF_EXPECT_STREQ(lf_strbuf_cstr(&b), "/home/u/.cache/llm-fuse");
  lf_strbuf_free(&b);
}

int main(void) {
  const char *t = getenv("TMPDIR");
  snprintf(tmp_root, sizeof(tmp_root), "%s/lf-cache-test-XXXXXX",
           t && *t ? t : "/tmp");
  if (!mkdtemp(tmp_root)) {
    perror("mkdtemp");
    return 1;
  }
  unsetenv("OPENAI_API_KEY");
  LF_RUN(digest_is_sha256_of_length_prefixed_fields);
  LF_RUN(digest_changes_with_every_field);
  LF_RUN(bad_keys_are_refused);
  LF_RUN(precision_is_an_optional_key_field);
  LF_RUN(store_then_lookup_round_trips);
  LF_RUN(optional_parts_and_defaults);
  LF_RUN(bad_entries_are_not_stored);
  LF_RUN(truncated_entry_is_corrupt);
  LF_RUN(flipped_byte_is_corrupt);
  LF_RUN(entry_under_the_wrong_name_is_corrupt);
  LF_RUN(wrong_schema_non_json_and_huge_are_corrupt);
  LF_RUN(structural_defects_are_corrupt);
  LF_RUN(lookup_never_returns_a_corrupt_entry_as_a_hit);
  LF_RUN(atomic_writes_leave_no_temp_files);
  LF_RUN(secret_guard_refuses_entries_holding_the_key);
  LF_RUN(store_raw_validates_and_skips_identical);
  LF_RUN(list_reports_every_file_with_its_state);
  LF_RUN(default_dir_follows_the_environment);
  int rc = lf_test_finish();
  if (rc == 0)
    nftw(tmp_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  return rc;
}
