/* sign_test.c - unit tests for llm_client/sign (Ed25519 signers and
 * keyrings) and for signed cache entries (cache.h): key files and their
 * permissions, RFC 8032 vectors, interoperability with the openssl binary,
 * keyring parsing, signing on store, trust on lookup, demotion, forgery
 * and malformed "signature" members. */
#include "llm_client/sign.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/sha256.h"
#include "base/testing.h"
#include "llm_client/cache.h"

#define FP_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define KERNEL                                                                 \
  "gpu.module @k {\n  gpu.func @f() kernel {\n    gpu.return\n  }\n}\n"

/* RFC 8032, section 7.1, TEST 1: the secret key as PKCS#8 PEM, the public
 * key (base64), its id (first 16 hex of SHA-256 of the 32 raw bytes,
 * computed independently) and the signature of the empty message. */
#define RFC_PEM                                                                \
  "-----BEGIN PRIVATE KEY-----\n"                                              \
  "MC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g\n"         \
  "-----END PRIVATE KEY-----\n"
#define RFC_PEM_BODY "MC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7"
#define RFC_PUB_B64 "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="
#define RFC_KEY_ID "21fe31dfa154a261"
static const unsigned char rfc_pub[32] = {
    0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a, 0xb7, 0xd5, 0x4b, 0xfe,
    0xd3, 0xc9, 0x64, 0x07, 0x3a, 0x0e, 0xe1, 0x72, 0xf3, 0xda, 0xa6,
    0x23, 0x25, 0xaf, 0x02, 0x1a, 0x68, 0xf7, 0x07, 0x51, 0x1a};
static const unsigned char rfc_sig[64] = {
    0xe5, 0x56, 0x43, 0x00, 0xc3, 0x60, 0xac, 0x72, 0x90, 0x86, 0xe2,
    0xcc, 0x80, 0x6e, 0x82, 0x8a, 0x84, 0x87, 0x7f, 0x1e, 0xb8, 0xe5,
    0xd9, 0x74, 0xd8, 0x73, 0xe0, 0x65, 0x22, 0x49, 0x01, 0x55, 0x5f,
    0xb8, 0x82, 0x15, 0x90, 0xa3, 0x3b, 0xac, 0xc6, 0x1e, 0x39, 0x70,
    0x1c, 0xf9, 0xb4, 0x6b, 0xd2, 0x5b, 0xf5, 0xf0, 0x59, 0x5b, 0xbe,
    0x24, 0x65, 0x51, 0x41, 0x43, 0x8e, 0x7a, 0x10, 0x0b};

static char tmp_root[256];
static bool have_openssl;

static const lf_cache_key_t key_a = {
    FP_A, "sm_90a", "llvm-22.1.8;ptxas-13.0", "openai", "gpt-4.1", "p1", NULL};

/* ---- Helpers -------------------------------------------------------------*/

/* A path under the temp root (one of 8 rotating buffers). */
static const char *tpath(const char *name) {
  static char bufs[8][512];
  static int next;
  char *p = bufs[next++ % 8];
  snprintf(p, sizeof(bufs[0]), "%s/%s", tmp_root, name);
  return p;
}

static char *slurp(const char *path, size_t *len) {
  lf_strbuf_t b;
  lf_strbuf_init(&b, (size_t)1 << 30);
  lf_status_t s = lf_read_file(path, &b);
  LF_EXPECT(s == LF_OK);
  if (s)
    fprintf(stderr, "  read %s: %s\n", path, lf_status_message(s));
  lf_status_free(s);
  if (len)
    *len = b.len;
  return lf_strbuf_take(&b);
}

static void spew_mode(const char *path, const void *data, size_t len,
                      mode_t mode) {
  unlink(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  LF_EXPECT(fd >= 0);
  if (fd < 0)
    return;
  LF_EXPECT(write(fd, data, len) == (ssize_t)len);
  LF_EXPECT(fchmod(fd, mode) == 0);
  close(fd);
}

static void spew(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  LF_EXPECT(f != NULL);
  if (!f)
    return;
  LF_EXPECT(fwrite(data, 1, len, f) == len);
  fclose(f);
}

/* Expects `s` to have `code` and a message holding `want` (when non-NULL);
 * frees it. `where` labels a failure. */
static void expect_status(lf_status_t s, lf_status_code_t code,
                          const char *want, const char *where) {
  bool ok = lf_status_code(s) == code &&
            (!want || (s && strstr(lf_status_message(s), want)));
  LF_EXPECT(ok);
  if (!ok)
    fprintf(stderr, "  %s: got %s '%s'\n  wanted %s with '%s'\n", where,
            lf_status_code_name(lf_status_code(s)),
            s ? lf_status_message(s) : "", lf_status_code_name(code),
            want ? want : "");
  lf_status_free(s);
}

static void expect_ok(lf_status_t s, const char *where) {
  expect_status(s, LF_STATUS_OK, NULL, where);
}

static char *b64(const unsigned char *d, size_t n) {
  static const char digits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
    *o++ = digits[v >> 18], *o++ = digits[(v >> 12) & 63];
    *o++ = digits[(v >> 6) & 63], *o++ = digits[v & 63];
  }
  if (i < n) {
    uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0);
    *o++ = digits[v >> 18], *o++ = digits[(v >> 12) & 63];
    *o++ = i + 1 < n ? digits[(v >> 6) & 63] : '=';
    *o++ = '=';
  }
  *o = '\0';
  return out;
}

static int b64_value(char c) {
  static const char digits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const char *p = strchr(digits, c);
  return c && p ? (int)(p - digits) : -1;
}

/* The base64 field of a keyring line "ed25519 <b64> ...", malloc'd. */
static char *line_key(const char *line) {
  const char *s = strchr(line, ' ');
  if (!s)
    return strdup("");
  ++s;
  const char *e = s;
  while (*e && *e != ' ' && *e != '\n')
    ++e;
  return strndup(s, (size_t)(e - s));
}

static lf_keyring_t *ring_of(const char *text) {
  lf_keyring_t *r = NULL;
  expect_ok(lf_keyring_parse(text, strlen(text), "test", &r), "ring_of");
  return r;
}

/* Makes a key pair `name` under the temp root: signer, keyring line. */
static lf_signer_t *make_key(const char *name, lf_strbuf_t *line) {
  const char *p = tpath(name);
  unlink(p);
  expect_ok(lf_sign_keygen(p, name, line), "keygen");
  lf_signer_t *s = NULL;
  expect_ok(lf_signer_load(p, &s), "load");
  return s;
}

static int run(const char *cmd) {
  char full[4096];
  snprintf(full, sizeof(full), "%s >/dev/null 2>&1", cmd);
  int rc = system(full);
  return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

/* Replaces the first `from` in `text` (NUL-terminated, malloc'd) with `to`;
 * returns the new text and its length. */
static char *replace(char *text, const char *from, const char *to,
                     size_t *len) {
  char *at = strstr(text, from);
  LF_EXPECT(at != NULL);
  if (!at) {
    fprintf(stderr, "  replace: '%s' not found\n", from);
    *len = strlen(text);
    return text;
  }
  size_t n = strlen(text), fl = strlen(from), tl = strlen(to);
  char *out = malloc(n - fl + tl + 1);
  size_t pre = (size_t)(at - text);
  memcpy(out, text, pre);
  memcpy(out + pre, to, tl);
  memcpy(out + pre + tl, at + fl, n - pre - fl + 1);
  *len = n - fl + tl;
  free(text);
  return out;
}

/* Recomputes the checksum of entry text as the format defines it: the
 * SHA-256 of the bytes up to `,"checksum"` followed by `}`. In place. */
static void fix_checksum(char *text) {
  static const char tag[] = ",\"checksum\":\"sha256:";
  char *at = strstr(text, tag);
  LF_EXPECT(at != NULL);
  if (!at)
    return;
  size_t pre = (size_t)(at - text);
  char *body = malloc(pre + 2);
  memcpy(body, text, pre);
  body[pre] = '}';
  char hex[LF_SHA256_HEX_SIZE];
  expect_ok(lf_sha256_hex(body, pre + 1, hex), "sha256");
  free(body);
  memcpy(at + sizeof(tag) - 1, hex, 64);
}

static lf_cache_entry_t sample_entry(lf_cache_verdict_t verdict) {
  static unsigned char cubin[] = {0x7f, 'E', 'L', 'F', 0, 1, 2, 0xff, 0xfe};
  lf_cache_entry_t e = {0};
  e.kernel = KERNEL;
  e.ptx = ".version 8.7\n.target sm_90a\n";
  e.cubin = cubin;
  e.cubin_len = sizeof(cubin);
  e.verdict = verdict;
  e.verification_json = "{\"trials\":5,\"max_abs_error\":1.5e-07}";
  e.provenance.created = 1700000000;
  e.provenance.attempts = 2;
  return e;
}

static lf_cache_t *open_cache(const char *dir, const lf_signer_t *signer,
                              const lf_keyring_t *trusted,
                              bool require_signed) {
  lf_cache_options_t o;
  lf_cache_options_init(&o);
  o.api_key_env = NULL;
  o.signer = signer;
  o.trusted = trusted;
  o.require_signed = require_signed;
  lf_cache_t *c = NULL;
  expect_ok(lf_cache_open(dir, &o, &c), "cache open");
  return c;
}

static char *entry_path(lf_cache_t *c, const char *digest) {
  lf_strbuf_t p;
  lf_strbuf_init(&p, 4096);
  lf_status_free(lf_cache_entry_path(c, digest, &p));
  return lf_strbuf_take(&p);
}

/* Looks key_a up in `dir` through a cache with these options; expects a
 * HIT and returns the entry (NULL otherwise). */
static lf_cache_entry_t *lookup_in(const char *dir,
                                   const lf_keyring_t *trusted,
                                   bool require_signed) {
  lf_cache_t *c = open_cache(dir, NULL, trusted, require_signed);
  lf_cache_entry_t *e = NULL;
  lf_cache_outcome_t out = LF_CACHE_MISS;
  expect_ok(lf_cache_lookup(c, &key_a, &e, &out), "lookup");
  LF_EXPECT(out == LF_CACHE_HIT && e != NULL);
  lf_cache_close(c);
  return e;
}

/* Stores the sample (with `verdict`) for key_a into a fresh folder `name`
 * through a cache signed by `signer` (may be NULL); returns the folder and
 * sets *out_path to the entry file (malloc'd). */
static const char *store_sample(const char *name, const lf_signer_t *signer,
                                lf_cache_verdict_t verdict, char **out_path) {
  static char dir[8][512];
  static int next;
  char *d = dir[next++ % 8];
  snprintf(d, sizeof(dir[0]), "%s/%s", tmp_root, name);
  lf_remove_tree(d);
  lf_cache_t *c = open_cache(d, signer, NULL, false);
  lf_cache_entry_t e = sample_entry(verdict);
  char digest[LF_SHA256_HEX_SIZE];
  expect_ok(lf_cache_store(c, &key_a, &e, digest), "store");
  *out_path = entry_path(c, digest);
  lf_cache_close(c);
  return d;
}

/* Parses `text` and expects DATA_LOSS naming `reason`. */
static void expect_parse_fails(const char *text, size_t len,
                               const char *reason) {
  lf_cache_entry_t *e = (lf_cache_entry_t *)1;
  expect_status(lf_cache_entry_parse(text, len, NULL, "mem", &e),
                LF_STATUS_DATA_LOSS, reason, reason);
  LF_EXPECT(e == NULL);
}

/* ---- 1. Key files --------------------------------------------------------*/

LF_TEST(keygen_writes_a_private_file_and_a_matching_public_line) {
  const char *path = tpath("gen.pem");
  lf_strbuf_t line;
  lf_strbuf_init(&line, 4096);
  expect_ok(lf_sign_keygen(path, "alice@host", &line), "keygen");
  struct stat st;
  LF_EXPECT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
  const char *l = lf_strbuf_cstr(&line);
  LF_EXPECT(strncmp(l, "ed25519 ", 8) == 0);
  LF_EXPECT(strlen(l) == 8 + 44 + 1 + strlen("alice@host") + 1);
  LF_EXPECT(strstr(l, " alice@host\n") != NULL);

  /* Never overwritten. */
  size_t n1 = 0, n2 = 0;
  char *before = slurp(path, &n1);
  LF_EXPECT(strstr(before, "-----BEGIN PRIVATE KEY-----") == before);
  lf_strbuf_t other;
  lf_strbuf_init(&other, 4096);
  expect_status(lf_sign_keygen(path, NULL, &other), LF_STATUS_ALREADY_EXISTS,
                "never overwritten", "keygen twice");
  LF_EXPECT(lf_strbuf_len(&other) == 0);
  char *after = slurp(path, &n2);
  LF_EXPECT(n1 == n2 && memcmp(before, after, n1) == 0);
  free(after);

  /* The public line trusts the loaded key, and the signer writes the same
   * line back. */
  lf_keyring_t *ring = ring_of(l);
  LF_EXPECT(lf_keyring_size(ring) == 1);
  lf_signer_t *s = NULL;
  expect_ok(lf_signer_load(path, &s), "load");
  if (s) {
    const char *id = lf_signer_key_id(s);
    LF_EXPECT(strlen(id) == 16 && strspn(id, "0123456789abcdef") == 16);
    LF_EXPECT(lf_keyring_has(ring, id));
    LF_EXPECT(!lf_keyring_has(ring, "0000000000000000"));
    LF_EXPECT(!lf_keyring_has(ring, NULL));
    lf_strbuf_t again;
    lf_strbuf_init(&again, 4096);
    expect_ok(lf_signer_public_line(s, "alice@host", &again), "public line");
    LF_EXPECT_STREQ(lf_strbuf_cstr(&again), l);
    lf_strbuf_reset(&again);
    expect_ok(lf_signer_public_line(s, NULL, &again), "public line, no note");
    char want[128];
    char *k = line_key(l);
    snprintf(want, sizeof(want), "ed25519 %s %s\n", k, id);
    LF_EXPECT_STREQ(lf_strbuf_cstr(&again), want);
    free(k);
    lf_strbuf_free(&again);
  }
  lf_signer_free(s);
  lf_keyring_free(ring);

  /* Two key pairs differ. */
  const char *path2 = tpath("gen2.pem");
  expect_ok(lf_sign_keygen(path2, "x", &other), "keygen 2");
  char *k1 = line_key(l), *k2 = line_key(lf_strbuf_cstr(&other));
  LF_EXPECT(strcmp(k1, k2) != 0);
  free(k1);
  free(k2);
  free(before);
  lf_strbuf_free(&other);
  lf_strbuf_free(&line);
}

LF_TEST(a_key_readable_by_others_is_refused_without_its_text) {
  const char *path = tpath("open.pem");
  spew_mode(path, RFC_PEM, strlen(RFC_PEM), 0644);
  lf_signer_t *s = (lf_signer_t *)1;
  lf_status_t st = lf_signer_load(path, &s);
  LF_EXPECT(s == NULL);
  LF_EXPECT(lf_status_code(st) == LF_STATUS_PERMISSION_DENIED);
  const char *m = st ? lf_status_message(st) : "";
  LF_EXPECT(strstr(m, "chmod 600") != NULL);
  LF_EXPECT(strstr(m, path) != NULL);
  LF_EXPECT(strstr(m, RFC_PEM_BODY) == NULL);
  LF_EXPECT(strstr(m, "PRIVATE KEY") == NULL);
  LF_EXPECT(strstr(m, "MC4C") == NULL);
  lf_status_free(st);

  /* Group-readable, group-writable, others-writable: all refused. */
  const mode_t modes[] = {0640, 0620, 0602, 0604, 0660};
  for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); ++i) {
    LF_EXPECT(chmod(path, modes[i]) == 0);
    s = (lf_signer_t *)1;
    expect_status(lf_signer_load(path, &s), LF_STATUS_PERMISSION_DENIED,
                  "chmod 600", "mode");
    LF_EXPECT(s == NULL);
  }
  /* 0400 is fine: only the owner reads it. */
  LF_EXPECT(chmod(path, 0400) == 0);
  expect_ok(lf_signer_load(path, &s), "0400");
  lf_signer_free(s);

  /* A key generated here, then opened up: the message has none of it. */
  const char *gen = tpath("gen-open.pem");
  unlink(gen);
  lf_strbuf_t line;
  lf_strbuf_init(&line, 4096);
  expect_ok(lf_sign_keygen(gen, NULL, &line), "keygen");
  LF_EXPECT(chmod(gen, 0644) == 0);
  char *pem = slurp(gen, NULL);
  char *body = strchr(pem, '\n');
  body = body ? strndup(body + 1, 40) : strdup("?");
  st = lf_signer_load(gen, &s);
  LF_EXPECT(lf_status_code(st) == LF_STATUS_PERMISSION_DENIED);
  m = st ? lf_status_message(st) : "";
  LF_EXPECT(strstr(m, "chmod 600") != NULL);
  LF_EXPECT(strlen(body) == 40 && strstr(m, body) == NULL);
  lf_status_free(st);
  free(body);
  free(pem);
  lf_strbuf_free(&line);
}

LF_TEST(files_that_are_not_ed25519_keys_are_refused) {
  lf_signer_t *s = (lf_signer_t *)1;
  expect_status(lf_signer_load(tpath("missing.pem"), &s),
                LF_STATUS_NOT_FOUND, "missing.pem", "missing");
  LF_EXPECT(s == NULL);
  expect_status(lf_signer_load("", &s), LF_STATUS_INVALID_ARGUMENT, NULL,
                "empty path");

  const char *path = tpath("garbage.pem");
  static const char garbage[] = "this is not a key\n\x01\x02\xff";
  spew_mode(path, garbage, sizeof(garbage) - 1, 0600);
  expect_status(lf_signer_load(path, &s), LF_STATUS_INVALID_ARGUMENT,
                "not a PEM Ed25519 private key", "garbage");
  LF_EXPECT(s == NULL);

  spew_mode(path, "", 0, 0600);
  expect_status(lf_signer_load(path, &s), LF_STATUS_INVALID_ARGUMENT,
                "not a PEM Ed25519 private key", "empty");

  /* A PEM with a damaged body. */
  char bad[] = RFC_PEM;
  bad[strlen("-----BEGIN PRIVATE KEY-----\n") + 5] = '*';
  spew_mode(path, bad, strlen(bad), 0600);
  expect_status(lf_signer_load(path, &s), LF_STATUS_INVALID_ARGUMENT,
                "not a PEM Ed25519 private key", "damaged PEM");

  /* A public key is not a private key. */
  static const char pub_pem[] =
      "-----BEGIN PUBLIC KEY-----\n"
      "MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n"
      "-----END PUBLIC KEY-----\n";
  spew_mode(path, pub_pem, strlen(pub_pem), 0600);
  expect_status(lf_signer_load(path, &s), LF_STATUS_INVALID_ARGUMENT,
                "not a PEM Ed25519 private key", "public key");

  /* A folder is not a key. */
  const char *dir = tpath("keydir");
  LF_EXPECT(mkdir(dir, 0700) == 0);
  expect_status(lf_signer_load(dir, &s), LF_STATUS_INVALID_ARGUMENT, NULL,
                "folder");

  /* A symbolic link is not followed. */
  const char *target = tpath("rfc-target.pem");
  spew_mode(target, RFC_PEM, strlen(RFC_PEM), 0600);
  const char *link = tpath("link.pem");
  unlink(link);
  LF_EXPECT(symlink(target, link) == 0);
  lf_status_t st = lf_signer_load(link, &s);
  LF_EXPECT(st != LF_OK && s == NULL);
  lf_status_free(st);

  if (!have_openssl) {
    printf("  (no openssl binary: RSA key case skipped)\n");
    return;
  }
  const char *rsa = tpath("rsa.pem");
  unlink(rsa);
  char cmd[1024];
  snprintf(cmd, sizeof(cmd),
           "openssl genpkey -algorithm rsa -pkeyopt rsa_keygen_bits:1024 "
           "-out '%s'",
           rsa);
  LF_EXPECT(run(cmd) == 0);
  LF_EXPECT(chmod(rsa, 0600) == 0);
  st = lf_signer_load(rsa, &s);
  LF_EXPECT(lf_status_code(st) == LF_STATUS_INVALID_ARGUMENT);
  LF_EXPECT(s == NULL);
  const char *m = st ? lf_status_message(st) : "";
  LF_EXPECT(strstr(m, "not a PEM Ed25519 private key") != NULL);
  LF_EXPECT(strstr(m, "PRIVATE KEY-----") == NULL);
  lf_status_free(st);
}

LF_TEST(rfc8032_vector_loads_signs_and_verifies) {
  const char *path = tpath("rfc.pem");
  spew_mode(path, RFC_PEM, strlen(RFC_PEM), 0600);
  lf_signer_t *s = NULL;
  expect_ok(lf_signer_load(path, &s), "load rfc");
  if (!s)
    return;
  LF_EXPECT_STREQ(lf_signer_key_id(s), RFC_KEY_ID);
  char id[LF_SIGN_KEY_ID_SIZE];
  expect_ok(lf_sign_key_id(rfc_pub, id), "key id");
  LF_EXPECT_STREQ(id, RFC_KEY_ID);

  lf_strbuf_t line;
  lf_strbuf_init(&line, 4096);
  expect_ok(lf_signer_public_line(s, "rfc", &line), "public line");
  LF_EXPECT_STREQ(lf_strbuf_cstr(&line), "ed25519 " RFC_PUB_B64 " rfc\n");

  unsigned char sig[LF_SIGN_BYTES];
  expect_ok(lf_signer_sign(s, "", 0, sig), "sign empty");
  LF_EXPECT(memcmp(sig, rfc_sig, sizeof(sig)) == 0);

  lf_keyring_t *ring = ring_of("ed25519 " RFC_PUB_B64 "\n");
  expect_ok(lf_keyring_verify(ring, RFC_KEY_ID, "", 0, rfc_sig), "verify");
  unsigned char bad[LF_SIGN_BYTES];
  memcpy(bad, rfc_sig, sizeof(bad));
  bad[10] ^= 0x01;
  expect_status(lf_keyring_verify(ring, RFC_KEY_ID, "", 0, bad),
                LF_STATUS_PERMISSION_DENIED, "does not verify", "rfc flipped");
  expect_status(lf_keyring_verify(ring, RFC_KEY_ID, "x", 1, rfc_sig),
                LF_STATUS_PERMISSION_DENIED, "does not verify",
                "rfc other message");
  lf_keyring_free(ring);
  lf_strbuf_free(&line);
  lf_signer_free(s);
}

LF_TEST(openssl_made_keys_load_and_interoperate) {
  if (!have_openssl) {
    printf("  (no openssl binary: skipped)\n");
    return;
  }
  const char *key = tpath("ossl.pem"), *der = tpath("ossl.pub.der"),
             *pub = tpath("ossl.pub.pem"), *msg = tpath("ossl.msg"),
             *sig = tpath("ossl.sig"), *sig2 = tpath("ossl.sig2");
  unlink(key);
  char cmd[2048];
  snprintf(cmd, sizeof(cmd), "openssl genpkey -algorithm ed25519 -out '%s'",
           key);
  LF_EXPECT(run(cmd) == 0);
  LF_EXPECT(chmod(key, 0600) == 0);
  lf_signer_t *s = NULL;
  expect_ok(lf_signer_load(key, &s), "load openssl key");
  if (!s)
    return;

  /* Our public key is openssl's (the last 32 bytes of its SPKI DER). */
  snprintf(cmd, sizeof(cmd),
           "openssl pkey -in '%s' -pubout -outform DER -out '%s' && "
           "openssl pkey -in '%s' -pubout -out '%s'",
           key, der, key, pub);
  LF_EXPECT(run(cmd) == 0);
  size_t n = 0;
  char *d = slurp(der, &n);
  LF_EXPECT(n == 44);
  lf_strbuf_t line;
  lf_strbuf_init(&line, 4096);
  expect_ok(lf_signer_public_line(s, "o", &line), "public line");
  char *mine = line_key(lf_strbuf_cstr(&line));
  char *theirs = n >= 32 ? b64((unsigned char *)d + n - 32, 32) : strdup("");
  LF_EXPECT_STREQ(mine, theirs);
  free(mine);
  free(theirs);
  free(d);

  /* Our signature verifies in openssl ... */
  static const char text[] = "llm-fuse-cache-signature/1\nabc\n";
  spew(msg, text, strlen(text));
  unsigned char ours[LF_SIGN_BYTES];
  expect_ok(lf_signer_sign(s, text, strlen(text), ours), "sign");
  spew(sig, ours, sizeof(ours));
  snprintf(cmd, sizeof(cmd),
           "openssl pkeyutl -verify -pubin -inkey '%s' -rawin -in '%s' "
           "-sigfile '%s'",
           pub, msg, sig);
  LF_EXPECT(run(cmd) == 0);
  /* ... and openssl's verifies here, under the ring from our line. */
  snprintf(cmd, sizeof(cmd),
           "openssl pkeyutl -sign -inkey '%s' -rawin -in '%s' -out '%s'", key,
           msg, sig2);
  LF_EXPECT(run(cmd) == 0);
  d = slurp(sig2, &n);
  LF_EXPECT(n == LF_SIGN_BYTES);
  lf_keyring_t *ring = ring_of(lf_strbuf_cstr(&line));
  if (n == LF_SIGN_BYTES) {
    LF_EXPECT(memcmp(d, ours, n) == 0); /* Ed25519 is deterministic */
    expect_ok(lf_keyring_verify(ring, lf_signer_key_id(s), text,
                                strlen(text), (unsigned char *)d),
              "verify openssl signature");
  }
  free(d);
  lf_keyring_free(ring);
  lf_strbuf_free(&line);
  lf_signer_free(s);
}

/* ---- 2. Sign and verify --------------------------------------------------*/

LF_TEST(signatures_verify_only_under_their_trusted_key) {
  lf_strbuf_t la, lb;
  lf_strbuf_init(&la, 4096);
  lf_strbuf_init(&lb, 4096);
  lf_signer_t *a = make_key("sv-a.pem", &la), *b = make_key("sv-b.pem", &lb);
  if (!a || !b)
    goto out;
  const char *ida = lf_signer_key_id(a), *idb = lf_signer_key_id(b);
  LF_EXPECT(strcmp(ida, idb) != 0);
  char msg[] = "llm-fuse-cache-signature/1\nsome digest\nsha256:x\n";
  size_t n = strlen(msg);
  unsigned char sig[LF_SIGN_BYTES], sig2[LF_SIGN_BYTES], sigb[LF_SIGN_BYTES];
  expect_ok(lf_signer_sign(a, msg, n, sig), "sign");
  expect_ok(lf_signer_sign(a, msg, n, sig2), "sign again");
  LF_EXPECT(memcmp(sig, sig2, sizeof(sig)) == 0);
  expect_ok(lf_signer_sign(b, msg, n, sigb), "sign b");
  LF_EXPECT(memcmp(sig, sigb, sizeof(sig)) != 0);

  lf_keyring_t *ra = ring_of(lf_strbuf_cstr(&la));
  lf_keyring_t *rb = ring_of(lf_strbuf_cstr(&lb));
  lf_keyring_t *empty = ring_of("");
  lf_strbuf_t both;
  lf_strbuf_init(&both, 4096);
  lf_strbuf_appendf(&both, "%s%s", lf_strbuf_cstr(&la), lf_strbuf_cstr(&lb));
  lf_keyring_t *rab = ring_of(lf_strbuf_cstr(&both));
  LF_EXPECT(lf_keyring_size(empty) == 0);
  LF_EXPECT(lf_keyring_size(rab) == 2);

  expect_ok(lf_keyring_verify(ra, ida, msg, n, sig), "good");
  expect_ok(lf_keyring_verify(rab, ida, msg, n, sig), "good in a ring of 2");
  expect_ok(lf_keyring_verify(rab, idb, msg, n, sigb), "good b");

  expect_status(lf_keyring_verify(empty, ida, msg, n, sig),
                LF_STATUS_PERMISSION_DENIED, "not in the trusted set",
                "empty ring");
  expect_status(lf_keyring_verify(NULL, ida, msg, n, sig),
                LF_STATUS_PERMISSION_DENIED, "not in the trusted set",
                "NULL ring");
  expect_status(lf_keyring_verify(rb, ida, msg, n, sig),
                LF_STATUS_PERMISSION_DENIED, "not in the trusted set",
                "other key's ring");
  expect_status(lf_keyring_verify(ra, NULL, msg, n, sig),
                LF_STATUS_PERMISSION_DENIED, "not in the trusted set",
                "no key id");
  expect_status(lf_keyring_verify(ra, "", msg, n, sig),
                LF_STATUS_PERMISSION_DENIED, "not in the trusted set",
                "empty key id");

  /* Every byte of the message counts. */
  for (size_t i = 0; i < n; ++i) {
    msg[i] ^= 0x20;
    lf_status_t st = lf_keyring_verify(ra, ida, msg, n, sig);
    LF_EXPECT(lf_status_code(st) == LF_STATUS_PERMISSION_DENIED &&
              strstr(lf_status_message(st), "does not verify"));
    lf_status_free(st);
    msg[i] ^= 0x20;
  }
  expect_status(lf_keyring_verify(ra, ida, msg, n - 1, sig),
                LF_STATUS_PERMISSION_DENIED, "does not verify", "shorter");
  /* Every byte of the signature counts. */
  for (size_t i = 0; i < LF_SIGN_BYTES; ++i) {
    sig2[i] ^= 0x01;
    lf_status_t st = lf_keyring_verify(ra, ida, msg, n, sig2);
    LF_EXPECT(lf_status_code(st) == LF_STATUS_PERMISSION_DENIED &&
              strstr(lf_status_message(st), "does not verify"));
    if (!st)
      fprintf(stderr, "  signature byte %zu flipped still verifies\n", i);
    lf_status_free(st);
    sig2[i] ^= 0x01;
  }
  /* B's signature claimed as A's, A's as B's. */
  expect_status(lf_keyring_verify(rab, ida, msg, n, sigb),
                LF_STATUS_PERMISSION_DENIED, "does not verify", "b as a");
  expect_status(lf_keyring_verify(rab, idb, msg, n, sig),
                LF_STATUS_PERMISSION_DENIED, "does not verify", "a as b");
  /* Still good after all that. */
  expect_ok(lf_keyring_verify(ra, ida, msg, n, sig), "good again");

  lf_keyring_free(ra);
  lf_keyring_free(rb);
  lf_keyring_free(rab);
  lf_keyring_free(empty);
  lf_strbuf_free(&both);
out:
  lf_signer_free(a);
  lf_signer_free(b);
  lf_strbuf_free(&la);
  lf_strbuf_free(&lb);
}

/* ---- 3. Keyring parsing --------------------------------------------------*/

/* Expects `text` to fail with INVALID_ARGUMENT naming "origin:LINE:" and
 * holding `what`. */
static void expect_ring_error(const char *text, size_t len, const char *at,
                              const char *what) {
  lf_keyring_t *r = (lf_keyring_t *)1;
  lf_status_t st = lf_keyring_parse(text, len, "ring.txt", &r);
  LF_EXPECT(r == NULL);
  bool ok = lf_status_code(st) == LF_STATUS_INVALID_ARGUMENT && st &&
            strncmp(lf_status_message(st), at, strlen(at)) == 0 &&
            strstr(lf_status_message(st), what);
  LF_EXPECT(ok);
  if (!ok)
    fprintf(stderr, "  got %s '%s'\n  wanted '%s...%s'\n",
            lf_status_code_name(lf_status_code(st)),
            st ? lf_status_message(st) : "", at, what);
  lf_status_free(st);
}

LF_TEST(keyring_lines_comments_crlf_and_duplicates) {
  lf_strbuf_t la, lb;
  lf_strbuf_init(&la, 4096);
  lf_strbuf_init(&lb, 4096);
  lf_signer_t *a = make_key("kr-a.pem", &la), *b = make_key("kr-b.pem", &lb);
  if (!a || !b)
    goto out;
  char *ka = line_key(lf_strbuf_cstr(&la)), *kb = line_key(lf_strbuf_cstr(&lb));
  char text[2048];
  snprintf(text, sizeof(text),
           "# trusted builders\r\n"
           "\r\n"
           "   \t \n"
           "  # indented comment with ed25519 garbage\n"
           "ed25519 %s alice laptop\r\n"
           "\ted25519\t%s\t\r\n"
           "ed25519 %s alice again (duplicate)\n"
           "ed25519   %s",
           ka, kb, ka, kb); /* the last line has no newline */
  lf_keyring_t *r = NULL;
  expect_ok(lf_keyring_parse(text, strlen(text), "ring.txt", &r), "parse");
  LF_EXPECT(lf_keyring_size(r) == 2);
  LF_EXPECT(lf_keyring_has(r, lf_signer_key_id(a)));
  LF_EXPECT(lf_keyring_has(r, lf_signer_key_id(b)));
  lf_keyring_free(r);

  /* Only comments and blanks: a valid ring that trusts nobody. */
  static const char none[] = "# nobody\n\n\r\n   \n";
  expect_ok(lf_keyring_parse(none, strlen(none), "x", &r), "comments only");
  LF_EXPECT(r != NULL && lf_keyring_size(r) == 0);
  LF_EXPECT(!lf_keyring_has(r, lf_signer_key_id(a)));
  lf_keyring_free(r);
  expect_ok(lf_keyring_parse(NULL, 0, NULL, &r), "NULL text");
  LF_EXPECT(r != NULL && lf_keyring_size(r) == 0);
  lf_keyring_free(r);

  /* len bounds the text: the second line is not read. */
  snprintf(text, sizeof(text), "ed25519 %s\nrsa garbage\n", ka);
  expect_ok(lf_keyring_parse(text, 8 + 44 + 1, "x", &r), "len bound");
  LF_EXPECT(lf_keyring_size(r) == 1);
  lf_keyring_free(r);

  /* From a file: errors name the file and line. */
  const char *path = tpath("ring.keys");
  snprintf(text, sizeof(text), "# ok\ned25519 %s\n\nnot-a-key\n", ka);
  spew(path, text, strlen(text));
  lf_status_t st = lf_keyring_load(path, &r);
  char at[600];
  snprintf(at, sizeof(at), "%s:4:", path);
  LF_EXPECT(lf_status_code(st) == LF_STATUS_INVALID_ARGUMENT && st &&
            strncmp(lf_status_message(st), at, strlen(at)) == 0);
  LF_EXPECT(r == NULL);
  lf_status_free(st);
  snprintf(text, sizeof(text), "ed25519 %s a\ned25519 %s b\n", ka, kb);
  spew(path, text, strlen(text));
  expect_ok(lf_keyring_load(path, &r), "load file");
  LF_EXPECT(lf_keyring_size(r) == 2);
  lf_keyring_free(r);
  expect_status(lf_keyring_load(tpath("no-such.keys"), &r),
                LF_STATUS_NOT_FOUND, "no-such.keys", "missing ring");
  free(ka);
  free(kb);
out:
  lf_signer_free(a);
  lf_signer_free(b);
  lf_strbuf_free(&la);
  lf_strbuf_free(&lb);
}

LF_TEST(keyring_errors_name_origin_and_line) {
  char text[1024];
  const char *good = "ed25519 " RFC_PUB_B64 " rfc\n";

  snprintf(text, sizeof(text), "# c\n%srsa " RFC_PUB_B64 "\n", good);
  expect_ring_error(text, strlen(text), "ring.txt:3:", "'ed25519'");
  snprintf(text, sizeof(text), "%sssh-ed25519 " RFC_PUB_B64 "\n", good);
  expect_ring_error(text, strlen(text), "ring.txt:2:", "'ed25519'");
  snprintf(text, sizeof(text), "ED25519 " RFC_PUB_B64 "\n");
  expect_ring_error(text, strlen(text), "ring.txt:1:", "'ed25519'");
  snprintf(text, sizeof(text), "\n\n\ned25519\n");
  expect_ring_error(text, strlen(text), "ring.txt:4:", "44 characters");

  /* 31 and 33 bytes, each 44 characters of base64. */
  snprintf(text, sizeof(text),
           "%sed25519 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg== c\n", good);
  expect_ring_error(text, strlen(text), "ring.txt:2:", "32 bytes");
  snprintf(text, sizeof(text),
           "%s\ned25519 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g\n",
           good);
  expect_ring_error(text, strlen(text), "ring.txt:3:", "32 bytes");
  /* Without padding, with extra padding, with a bad character. */
  snprintf(text, sizeof(text),
           "ed25519 11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo\n");
  expect_ring_error(text, strlen(text), "ring.txt:1:", "32 bytes");
  snprintf(text, sizeof(text), "ed25519 " RFC_PUB_B64 "=\n");
  expect_ring_error(text, strlen(text), "ring.txt:1:", "32 bytes");
  snprintf(text, sizeof(text),
           "ed25519 11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcH*Ro=\n");
  expect_ring_error(text, strlen(text), "ring.txt:1:", "32 bytes");

  /* Non-canonical: the last character before '=' carries 2 unused bits;
   * setting one decodes to the same 32 bytes but is refused. */
  char key[] = RFC_PUB_B64;
  int v = b64_value(key[42]);
  LF_EXPECT(v >= 0 && (v & 3) == 0);
  static const char digits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int bits = 1; bits <= 3; ++bits) {
    key[42] = digits[v | bits];
    snprintf(text, sizeof(text), "%s# x\ned25519 %s stray bits\n", good, key);
    expect_ring_error(text, strlen(text), "ring.txt:3:", "canonical");
  }

  /* Control characters (tab is allowed as a separator). */
  snprintf(text, sizeof(text), "%s%sed25519 " RFC_PUB_B64 " com\x01ment\n",
           good, good);
  expect_ring_error(text, strlen(text), "ring.txt:3:", "control character");
  snprintf(text, sizeof(text), "ed25519 " RFC_PUB_B64 "\rX\n");
  expect_ring_error(text, strlen(text), "ring.txt:1:", "control character");
  snprintf(text, sizeof(text), "%sed25519 " RFC_PUB_B64 "\x1b[2K\n", good);
  expect_ring_error(text, strlen(text), "ring.txt:2:", "control character");
  /* A NUL inside the counted bytes. */
  static const char nul[] = "ed25519 " RFC_PUB_B64 " a\0b\n";
  expect_ring_error(nul, sizeof(nul) - 1, "ring.txt:1:", "control character");

  /* A bad line after good ones fails the whole ring. */
  snprintf(text, sizeof(text), "%s%s%sgarbage\n", good, good, good);
  expect_ring_error(text, strlen(text), "ring.txt:4:", "'ed25519'");
}

/* ---- 4. Signed cache entries ---------------------------------------------*/

LF_TEST(a_cache_with_a_signer_signs_and_lookups_judge) {
  lf_strbuf_t la, lb;
  lf_strbuf_init(&la, 4096);
  lf_strbuf_init(&lb, 4096);
  lf_signer_t *a = make_key("c-a.pem", &la), *b = make_key("c-b.pem", &lb);
  lf_keyring_t *ra = ring_of(lf_strbuf_cstr(&la));
  lf_keyring_t *rb = ring_of(lf_strbuf_cstr(&lb));
  char *path = NULL;
  if (!a || !b)
    goto out;
  const char *dir = store_sample("signed", a, LF_CACHE_VERIFIED, &path);
  size_t n = 0;
  char *file = slurp(path, &n);
  char want[128];
  snprintf(want, sizeof(want),
           ",\"signature\":{\"alg\":\"ed25519\",\"key\":\"%s\",\"value\":\"",
           lf_signer_key_id(a));
  char *sigm = strstr(file, want);
  char *sum = strstr(file, ",\"checksum\":\"sha256:");
  LF_EXPECT(sigm != NULL && sum != NULL && sum < sigm);
  /* The value is 88 characters of base64 and the member is the last. */
  if (sigm) {
    char *v = sigm + strlen(want);
    LF_EXPECT(strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwx"
                        "yz0123456789+/") == 86);
    LF_EXPECT(strcmp(v + 86, "==\"}}\n") == 0);
  }

  /* The signature signs lf_cache_signed_message(digest, checksum), which is
   * "llm-fuse-cache-signature/1\n<digest>\nsha256:<checksum>\n". */
  lf_cache_entry_t *e = NULL;
  expect_ok(lf_cache_entry_parse(file, n, &key_a, "signed", &e), "parse");
  if (e) {
    LF_EXPECT_STREQ(e->signature.key_id, lf_signer_key_id(a));
    LF_EXPECT(sum && strncmp(sum + 20, e->checksum, 64) == 0);
    char msg[LF_CACHE_SIGNED_MESSAGE_SIZE], mine[256];
    size_t mlen = 0;
    expect_ok(lf_cache_signed_message(e->digest, e->checksum, msg, &mlen),
              "message");
    snprintf(mine, sizeof(mine), "llm-fuse-cache-signature/1\n%s\nsha256:%s\n",
             e->digest, e->checksum);
    LF_EXPECT(mlen == strlen(mine) && memcmp(msg, mine, mlen) == 0);
    expect_ok(lf_keyring_verify(ra, e->signature.key_id, mine, strlen(mine),
                                e->signature.value),
              "verify by hand");
    expect_ok(lf_cache_entry_check_signature(ra, e), "check_signature");
    expect_status(lf_cache_entry_check_signature(rb, e),
                  LF_STATUS_PERMISSION_DENIED, "not in the trusted set",
                  "check under b");
    expect_status(lf_cache_entry_check_signature(NULL, e),
                  LF_STATUS_PERMISSION_DENIED, "not in the trusted set",
                  "check under NULL");
    lf_cache_entry_free(e);
  }
  expect_status(lf_cache_signed_message("xyz", FP_A, (char[192]){0},
                                        &(size_t){0}),
                LF_STATUS_INVALID_ARGUMENT, NULL, "bad digest");

  /* Trusted: SIGNED, verified. With require_signed too. */
  for (int req = 0; req < 2; ++req) {
    e = lookup_in(dir, ra, req);
    if (e) {
      LF_EXPECT(e->trust == LF_CACHE_TRUST_SIGNED);
      LF_EXPECT(e->verdict == LF_CACHE_VERIFIED);
      LF_EXPECT(!e->from_remote);
      LF_EXPECT(strstr(e->trust_note, lf_signer_key_id(a)) != NULL);
      LF_EXPECT(strstr(e->verification_json, "demoted") == NULL);
      LF_EXPECT(strstr(e->verification_json, "\"status\":\"verified\""));
    }
    lf_cache_entry_free(e);
  }

  /* require_signed without trusted keys (or with another key): DEMOTED in
   * the returned entry, the file untouched. */
  const lf_keyring_t *rings[] = {NULL, rb};
  const char *why[] = {"not in the trusted set", "not in the trusted set"};
  for (int i = 0; i < 2; ++i) {
    e = lookup_in(dir, rings[i], true);
    if (e) {
      LF_EXPECT(e->trust == LF_CACHE_TRUST_DEMOTED);
      LF_EXPECT(e->verdict == LF_CACHE_UNVERIFIED);
      LF_EXPECT(strstr(e->trust_note, why[i]) != NULL);
      const char *vj = e->verification_json;
      LF_EXPECT(vj && strstr(vj, "\"demoted\":{") != NULL);
      LF_EXPECT(vj && strstr(vj, "\"claimed\":\"verified\"") != NULL);
      /* The record as a demoted entry file holds it: "status" first. */
      LF_EXPECT(vj && strncmp(vj, "{\"status\":\"unverified\",", 23) == 0);
      LF_EXPECT(vj && strstr(vj, "\"status\":\"verified\"") == NULL);
      LF_EXPECT(vj && strstr(vj, "\"trials\":5") != NULL); /* kept */
      LF_EXPECT(e->signature.key_id[0] == '\0');
      if (!vj || !strstr(vj, "demoted"))
        fprintf(stderr, "  verification: %s\n", vj ? vj : "(null)");
    }
    lf_cache_entry_free(e);
    size_t n2 = 0;
    char *now = slurp(path, &n2);
    LF_EXPECT(n2 == n && memcmp(now, file, n) == 0);
    free(now);
  }

  /* A plain cache: LOCAL, verified. */
  e = lookup_in(dir, NULL, false);
  if (e) {
    LF_EXPECT(e->trust == LF_CACHE_TRUST_LOCAL);
    LF_EXPECT(e->verdict == LF_CACHE_VERIFIED);
    LF_EXPECT(strstr(e->verification_json, "demoted") == NULL);
    LF_EXPECT_STREQ(e->signature.key_id, lf_signer_key_id(a));
  }
  lf_cache_entry_free(e);
  free(file);
  free(path);
  path = NULL;

  /* A rejected verdict is a claim too; an unverified one claims nothing. */
  dir = store_sample("signed-rejected", a, LF_CACHE_REJECTED, &path);
  e = lookup_in(dir, NULL, true);
  if (e) {
    LF_EXPECT(e->trust == LF_CACHE_TRUST_DEMOTED);
    LF_EXPECT(e->verdict == LF_CACHE_UNVERIFIED);
    LF_EXPECT(strstr(e->verification_json, "\"claimed\":\"rejected\""));
  }
  lf_cache_entry_free(e);
  e = lookup_in(dir, ra, true);
  LF_EXPECT(e && e->trust == LF_CACHE_TRUST_SIGNED &&
            e->verdict == LF_CACHE_REJECTED);
  lf_cache_entry_free(e);
  free(path);
  path = NULL;
  dir = store_sample("unverified", NULL, LF_CACHE_UNVERIFIED, &path);
  e = lookup_in(dir, NULL, true);
  if (e) {
    LF_EXPECT(e->trust == LF_CACHE_TRUST_NONE);
    LF_EXPECT(e->verdict == LF_CACHE_UNVERIFIED);
    LF_EXPECT(strstr(e->verification_json, "demoted") == NULL);
  }
  lf_cache_entry_free(e);

out:
  free(path);
  lf_keyring_free(ra);
  lf_keyring_free(rb);
  lf_signer_free(a);
  lf_signer_free(b);
  lf_strbuf_free(&la);
  lf_strbuf_free(&lb);
}

/* ---- 5. Forgery and malformed signatures ---------------------------------*/

/* Edits the signed file at `path` (from -> to), fixes the checksum, writes
 * it back; expects it to parse, its signature to fail under `ring` with
 * "does not verify", and require_signed lookups to demote it. */
static void expect_forgery_caught(const char *dir, const char *path,
                                  const lf_keyring_t *ring, const char *from,
                                  const char *to) {
  size_t n = 0;
  char *t = slurp(path, &n);
  t = replace(t, from, to, &n);
  fix_checksum(t);
  spew(path, t, n);
  lf_cache_entry_t *e = NULL;
  expect_ok(lf_cache_entry_parse(t, n, &key_a, "forged", &e),
            "forged entry parses");
  if (e) {
    LF_EXPECT(e->signature.key_id[0] != '\0');
    expect_status(lf_cache_entry_check_signature(ring, e),
                  LF_STATUS_PERMISSION_DENIED, "does not verify", to);
  }
  lf_cache_entry_free(e);
  e = lookup_in(dir, ring, true);
  if (e) {
    LF_EXPECT(e->trust == LF_CACHE_TRUST_DEMOTED);
    LF_EXPECT(e->verdict == LF_CACHE_UNVERIFIED);
    LF_EXPECT(strstr(e->trust_note, "does not verify") != NULL);
    LF_EXPECT(strstr(e->verification_json, "\"demoted\"") != NULL);
  }
  lf_cache_entry_free(e);
  /* A plain reader still sees a local claim, never a signed one. */
  e = lookup_in(dir, ring, false);
  LF_EXPECT(e && e->trust == LF_CACHE_TRUST_LOCAL);
  lf_cache_entry_free(e);
  free(t);
}

LF_TEST(forged_entries_parse_but_do_not_verify) {
  lf_strbuf_t la;
  lf_strbuf_init(&la, 4096);
  lf_signer_t *a = make_key("f-a.pem", &la);
  lf_keyring_t *ra = ring_of(lf_strbuf_cstr(&la));
  char *path = NULL;
  if (!a)
    goto out;
  /* The kernel text changed. */
  const char *dir = store_sample("forged-kernel", a, LF_CACHE_VERIFIED, &path);
  expect_forgery_caught(dir, path, ra, "gpu.func @f()", "gpu.func @g()");
  free(path);
  /* A rejected kernel re-labelled verified. */
  dir = store_sample("forged-verdict", a, LF_CACHE_REJECTED, &path);
  expect_forgery_caught(dir, path, ra, "\"status\":\"rejected\"",
                        "\"status\":\"verified\"");
  free(path);
  /* The cubin swapped. */
  dir = store_sample("forged-cubin", a, LF_CACHE_VERIFIED, &path);
  expect_forgery_caught(dir, path, ra, "\"cubin\":\"f0VMRgABAv/+\"",
                        "\"cubin\":\"f0VMRgABAv/9\"");
  free(path);

  /* A signature copied from another key's entry (another model). */
  dir = store_sample("transplant", a, LF_CACHE_VERIFIED, &path);
  {
    lf_cache_key_t kb = key_a;
    kb.model = "gpt-5";
    char d2[520];
    snprintf(d2, sizeof(d2), "%s/transplant-src", tmp_root);
    lf_cache_t *c = open_cache(d2, a, NULL, false);
    lf_cache_entry_t src = sample_entry(LF_CACHE_REJECTED);
    char digest[LF_SHA256_HEX_SIZE];
    expect_ok(lf_cache_store(c, &kb, &src, digest), "store src");
    char *sp = entry_path(c, digest);
    char *stext = slurp(sp, NULL);
    size_t n = 0;
    char *t = slurp(path, &n);
    char *ssig = strstr(stext, ",\"signature\":"),
         *tsig = strstr(t, ",\"signature\":");
    LF_EXPECT(ssig && tsig && strlen(ssig) == strlen(tsig));
    if (ssig && tsig && strlen(ssig) == strlen(tsig)) {
      LF_EXPECT(strcmp(ssig, tsig) != 0);
      memcpy(tsig, ssig, strlen(ssig));
      spew(path, t, n);
      lf_cache_entry_t *e = NULL;
      expect_ok(lf_cache_entry_parse(t, n, &key_a, "transplant", &e),
                "transplant parses");
      if (e)
        expect_status(lf_cache_entry_check_signature(ra, e),
                      LF_STATUS_PERMISSION_DENIED, "does not verify",
                      "transplanted signature");
      lf_cache_entry_free(e);
    }
    free(t);
    free(stext);
    free(sp);
    lf_cache_close(c);
  }
  free(path);

  /* The signature stripped: an unsigned local claim, demoted when
   * signatures are required. */
  dir = store_sample("stripped", a, LF_CACHE_VERIFIED, &path);
  {
    size_t n = 0;
    char *t = slurp(path, &n);
    char *s = strstr(t, ",\"signature\":");
    LF_EXPECT(s != NULL);
    if (s) {
      strcpy(s, "}\n");
      n = strlen(t);
      spew(path, t, n);
    }
    lf_cache_entry_t *e = NULL;
    expect_ok(lf_cache_entry_parse(t, n, NULL, "stripped", &e), "stripped");
    if (e)
      expect_status(lf_cache_entry_check_signature(ra, e),
                    LF_STATUS_PERMISSION_DENIED, "not signed", "stripped");
    lf_cache_entry_free(e);
    e = lookup_in(dir, ra, true);
    LF_EXPECT(e && e->trust == LF_CACHE_TRUST_DEMOTED &&
              e->verdict == LF_CACHE_UNVERIFIED);
    lf_cache_entry_free(e);
    free(t);
  }
  free(path);
  path = NULL;

out:
  free(path);
  lf_keyring_free(ra);
  lf_signer_free(a);
  lf_strbuf_free(&la);
}

LF_TEST(malformed_signature_members_are_data_loss) {
  lf_strbuf_t la;
  lf_strbuf_init(&la, 4096);
  lf_signer_t *a = make_key("m-a.pem", &la);
  char *path = NULL;
  if (!a)
    goto out;
  store_sample("malformed", a, LF_CACHE_VERIFIED, &path);
  size_t n = 0;
  char *orig = slurp(path, &n);
  const char *id = lf_signer_key_id(a);
  char *sig = strstr(orig, ",\"signature\":");
  char *sum = strstr(orig, ",\"checksum\":");
  LF_EXPECT(sig && sum && sum < sig);
  if (!sig || !sum)
    goto out_orig;
  {
    /* The pristine file parses (control). */
    lf_cache_entry_t *e = NULL;
    expect_ok(lf_cache_entry_parse(orig, n, NULL, "mem", &e), "pristine");
    lf_cache_entry_free(e);
  }
  char *sig_member = strndup(sig + 1, strlen(sig + 1) - 2); /* no "}\n" */
  char *sum_member = strndup(sum + 1, (size_t)(sig - sum - 1));
  char *value = strstr(sig_member, "\"value\":\"");
  value = value ? strndup(value + 9, 88) : strdup("");
  LF_EXPECT(strlen(value) == 88);

  /* The signature member moved before the checksum. */
  {
    size_t pre = (size_t)(sum - orig);
    lf_strbuf_t t;
    lf_strbuf_init(&t, n + 16);
    lf_strbuf_append(&t, orig, pre);
    lf_strbuf_appendf(&t, ",%s,%s}\n", sig_member, sum_member);
    LF_EXPECT(lf_strbuf_len(&t) == n);
    expect_parse_fails(lf_strbuf_cstr(&t), lf_strbuf_len(&t),
                       "'signature' is repeated or out of order");
    lf_strbuf_free(&t);
  }

  size_t m = 0;
  char *t;
  char from[256], to[512];
  /* An unknown member inside "signature". */
  t = replace(strdup(orig), "\"alg\":\"ed25519\",",
              "\"alg\":\"ed25519\",\"note\":\"x\",", &m);
  expect_parse_fails(t, m, "signature has an unexpected member 'note'");
  free(t);
  snprintf(from, sizeof(from), "\"value\":\"%s\"", value);
  snprintf(to, sizeof(to), "\"value\":\"%s\",\"extra\":1", value);
  t = replace(strdup(orig), from, to, &m);
  expect_parse_fails(t, m, "signature has an unexpected member 'extra'");
  free(t);
  /* A member missing, members reordered, the member not an object. */
  snprintf(from, sizeof(from), ",\"value\":\"%s\"", value);
  t = replace(strdup(orig), from, "", &m);
  expect_parse_fails(t, m, "signature has no member 'value'");
  free(t);
  snprintf(from, sizeof(from), "\"alg\":\"ed25519\",\"key\":\"%s\"", id);
  snprintf(to, sizeof(to), "\"key\":\"%s\",\"alg\":\"ed25519\"", id);
  t = replace(strdup(orig), from, to, &m);
  expect_parse_fails(t, m, "repeated or out of order");
  free(t);
  t = replace(strdup(orig), sig_member, "\"signature\":\"ed25519\"", &m);
  expect_parse_fails(t, m, "member 'signature' is not an object");
  free(t);
  /* alg "rsa". */
  t = replace(strdup(orig), "\"alg\":\"ed25519\"", "\"alg\":\"rsa\"", &m);
  expect_parse_fails(t, m, "signature alg 'rsa' is not 'ed25519'");
  free(t);
  /* A 15-hex, a 17-hex and an upper-case key id. */
  snprintf(from, sizeof(from), "\"key\":\"%s\"", id);
  snprintf(to, sizeof(to), "\"key\":\"%.15s\"", id);
  t = replace(strdup(orig), from, to, &m);
  expect_parse_fails(t, m, "is not 16 lower-case hex digits");
  free(t);
  snprintf(to, sizeof(to), "\"key\":\"%s0\"", id);
  t = replace(strdup(orig), from, to, &m);
  expect_parse_fails(t, m, "is not 16 lower-case hex digits");
  free(t);
  t = replace(strdup(orig), from, "\"key\":\"ABCDEF0123456789\"", &m);
  expect_parse_fails(t, m, "is not 16 lower-case hex digits");
  free(t);
  /* A 63-byte and a 65-byte value; a non-canonical 64-byte one. */
  unsigned char bytes[65];
  memset(bytes, 0x5a, sizeof(bytes));
  snprintf(from, sizeof(from), "\"value\":\"%s\"", value);
  for (size_t len = 63; len <= 65; len += 2) {
    char *v = b64(bytes, len);
    snprintf(to, sizeof(to), "\"value\":\"%s\"", v);
    t = replace(strdup(orig), from, to, &m);
    expect_parse_fails(t, m, "signature value is not canonical base64 of 64");
    free(t);
    free(v);
  }
  {
    char *v = strdup(value);
    int bits = b64_value(v[85]);
    LF_EXPECT(bits >= 0 && (bits & 15) == 0);
    static const char digits[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    v[85] = digits[(bits | 1) & 63];
    snprintf(to, sizeof(to), "\"value\":\"%s\"", v);
    t = replace(strdup(orig), from, to, &m);
    expect_parse_fails(t, m, "signature value is not canonical base64 of 64");
    free(t);
    free(v);
  }

  free(value);
  free(sig_member);
  free(sum_member);
out_orig:
  free(orig);
out:
  free(path);
  lf_signer_free(a);
  lf_strbuf_free(&la);
}

/* ---- 6. Unsigned entries -------------------------------------------------*/

LF_TEST(a_cache_without_a_signer_writes_unsigned_entries) {
  lf_strbuf_t la;
  lf_strbuf_init(&la, 4096);
  lf_signer_t *a = make_key("u-a.pem", &la);
  lf_keyring_t *ra = ring_of(lf_strbuf_cstr(&la));
  char *path = NULL;
  const char *dir = store_sample("unsigned", NULL, LF_CACHE_VERIFIED, &path);
  size_t n = 0;
  char *file = slurp(path, &n);
  LF_EXPECT(strstr(file, "signature") == NULL);
  LF_EXPECT(n > 3 && strcmp(file + n - 3, "\"}\n") == 0);
  lf_cache_entry_t *e = NULL;
  expect_ok(lf_cache_entry_parse(file, n, &key_a, "unsigned", &e), "parse");
  if (e) {
    LF_EXPECT(e->signature.key_id[0] == '\0');
    expect_status(lf_cache_entry_check_signature(ra, e),
                  LF_STATUS_PERMISSION_DENIED, "not signed", "unsigned");
    expect_status(lf_cache_entry_check_signature(NULL, e),
                  LF_STATUS_PERMISSION_DENIED, "not signed", "unsigned NULL");
  }
  lf_cache_entry_free(e);
  e = lookup_in(dir, ra, false);
  LF_EXPECT(e && e->trust == LF_CACHE_TRUST_LOCAL &&
            e->verdict == LF_CACHE_VERIFIED);
  lf_cache_entry_free(e);
  e = lookup_in(dir, ra, true);
  if (e) {
    LF_EXPECT(e->trust == LF_CACHE_TRUST_DEMOTED);
    LF_EXPECT(strstr(e->trust_note, "not signed") != NULL);
  }
  lf_cache_entry_free(e);

  /* lf_cache_entry_serialize never signs either. */
  lf_cache_entry_t s = sample_entry(LF_CACHE_VERIFIED);
  char *text = NULL;
  size_t tl = 0;
  expect_ok(lf_cache_entry_serialize(&key_a, &s, &text, &tl), "serialize");
  LF_EXPECT(text && tl == n && memcmp(text, file, n) == 0);
  free(text);

  /* A signed store of the same entry adds only the signature member. */
  free(path);
  path = NULL;
  if (a) {
    store_sample("unsigned-then-signed", a, LF_CACHE_VERIFIED, &path);
    size_t n2 = 0;
    char *signed_file = slurp(path, &n2);
    LF_EXPECT(n2 > n && memcmp(signed_file, file, n - 2) == 0 &&
              strncmp(signed_file + n - 2, ",\"signature\":{", 14) == 0);
    free(signed_file);
  }
  free(file);
  free(path);
  lf_keyring_free(ra);
  lf_signer_free(a);
  lf_strbuf_free(&la);
}

int main(void) {
  const char *t = getenv("TMPDIR");
  snprintf(tmp_root, sizeof(tmp_root), "%s/lf-sign-test-XXXXXX",
           t && *t ? t : "/tmp");
  if (!mkdtemp(tmp_root)) {
    perror("mkdtemp");
    return 1;
  }
  unsetenv("OPENAI_API_KEY");
  have_openssl = run("openssl version") == 0;
  LF_RUN(keygen_writes_a_private_file_and_a_matching_public_line);
  LF_RUN(a_key_readable_by_others_is_refused_without_its_text);
  LF_RUN(files_that_are_not_ed25519_keys_are_refused);
  LF_RUN(rfc8032_vector_loads_signs_and_verifies);
  LF_RUN(openssl_made_keys_load_and_interoperate);
  LF_RUN(signatures_verify_only_under_their_trusted_key);
  LF_RUN(keyring_lines_comments_crlf_and_duplicates);
  LF_RUN(keyring_errors_name_origin_and_line);
  LF_RUN(a_cache_with_a_signer_signs_and_lookups_judge);
  LF_RUN(forged_entries_parse_but_do_not_verify);
  LF_RUN(malformed_signature_members_are_data_loss);
  LF_RUN(a_cache_without_a_signer_writes_unsigned_entries);
  int rc = lf_test_finish();
  lf_remove_tree(tmp_root);
  return rc;
}
