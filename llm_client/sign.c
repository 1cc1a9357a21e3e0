/* sign.c - Ed25519 signers and keyrings through libcrypto (OpenSSL 3). */
#include "llm_client/sign.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "base/sha256.h"

/* Private key files larger than this are not keys. */
#define MAX_KEY_FILE 16384
/* Keyring files larger than this are refused. */
#define MAX_RING_FILE ((size_t)4 << 20)

struct lf_signer_s {
  EVP_PKEY *pkey;
  unsigned char pub[LF_SIGN_PUBLIC_BYTES];
  char id[LF_SIGN_KEY_ID_SIZE];
};

typedef struct ring_key_s {
  char id[LF_SIGN_KEY_ID_SIZE];
  EVP_PKEY *pkey;
} ring_key_t;

struct lf_keyring_s {
  ring_key_t *keys;
  size_t count;
};

static lf_status_t oom(void) {
  return LF_STATUS(LF_STATUS_RESOURCE_EXHAUSTED, "out of memory");
}

lf_status_t lf_sign_key_id(const unsigned char pub[LF_SIGN_PUBLIC_BYTES],
                           char out_id[LF_SIGN_KEY_ID_SIZE]) {
  char hex[LF_SHA256_HEX_SIZE];
  LF_RETURN_IF_ERROR(lf_sha256_hex(pub, LF_SIGN_PUBLIC_BYTES, hex));
  memcpy(out_id, hex, LF_SIGN_KEY_ID_SIZE - 1);
  out_id[LF_SIGN_KEY_ID_SIZE - 1] = '\0';
  return LF_OK;
}

/* ---- Signer ---------------------------------------------------------------*/

static lf_status_t signer_from_pkey(EVP_PKEY *pkey, lf_signer_t **out) {
  lf_signer_t *s = calloc(1, sizeof(*s));
  if (!s) {
    EVP_PKEY_free(pkey);
    return oom();
  }
  s->pkey = pkey;
  size_t n = sizeof(s->pub);
  if (EVP_PKEY_get_raw_public_key(pkey, s->pub, &n) != 1 ||
      n != LF_SIGN_PUBLIC_BYTES) {
    lf_signer_free(s);
    return LF_STATUS(LF_STATUS_INTERNAL,
                     "libcrypto gave no raw Ed25519 public key");
  }
  lf_status_t st = lf_sign_key_id(s->pub, s->id);
  if (st) {
    lf_signer_free(s);
    return st;
  }
  *out = s;
  return LF_OK;
}

lf_status_t lf_signer_load(const char *path, lf_signer_t **out_signer) {
  *out_signer = NULL;
  if (!path || !*path)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "no signing key file named");
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return LF_STATUS(errno == ENOENT ? LF_STATUS_NOT_FOUND
                                     : LF_STATUS_UNAVAILABLE,
                     "signing key '%s': cannot open: %s", path,
                     strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "signing key '%s': not a regular file", path);
  }
  if (st.st_mode & 077) {
    close(fd);
    return LF_STATUS(LF_STATUS_PERMISSION_DENIED,
                     "signing key '%s': group or others may access it "
                     "(mode %03o); a private key must be readable by its "
                     "owner only: chmod 600 '%s'",
                     path, (unsigned)(st.st_mode & 0777), path);
  }
  if (st.st_size <= 0 || st.st_size > MAX_KEY_FILE) {
    close(fd);
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "signing key '%s': %lld bytes is not a PEM Ed25519 "
                     "private key",
                     path, (long long)st.st_size);
  }
  char *buf = OPENSSL_secure_malloc((size_t)st.st_size + 1);
  if (!buf)
    buf = OPENSSL_malloc((size_t)st.st_size + 1);
  if (!buf) {
    close(fd);
    return oom();
  }
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  EVP_PKEY *pkey = NULL;
  BIO *bio = got ? BIO_new_mem_buf(buf, (int)got) : NULL;
  if (bio) {
    pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)"");
    BIO_free(bio);
  }
  OPENSSL_cleanse(buf, (size_t)st.st_size + 1);
  if (CRYPTO_secure_allocated(buf))
    OPENSSL_secure_free(buf);
  else
    OPENSSL_free(buf);
  if (!pkey || EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519) {
    EVP_PKEY_free(pkey);
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                     "signing key '%s': not a PEM Ed25519 private key "
                     "(make one with `llm-fuse-cache keygen FILE` or "
                     "`openssl genpkey -algorithm ed25519`)",
                     path);
  }
  return signer_from_pkey(pkey, out_signer);
}

void lf_signer_free(lf_signer_t *signer) {
  if (!signer)
    return;
  EVP_PKEY_free(signer->pkey);
  free(signer);
}

const char *lf_signer_key_id(const lf_signer_t *signer) { return signer->id; }

lf_status_t lf_signer_public_line(const lf_signer_t *signer,
                                  const char *comment, lf_strbuf_t *out) {
  unsigned char b64[64];
  int n = EVP_EncodeBlock(b64, signer->pub, LF_SIGN_PUBLIC_BYTES);
  return lf_strbuf_appendf(out, "ed25519 %.*s %s\n", n, (const char *)b64,
                           comment && *comment ? comment : signer->id);
}

lf_status_t lf_signer_sign(const lf_signer_t *signer, const void *msg,
                           size_t len, unsigned char out_sig[LF_SIGN_BYTES]) {
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  size_t n = LF_SIGN_BYTES;
  bool ok = ctx &&
            EVP_DigestSignInit(ctx, NULL, NULL, NULL, signer->pkey) == 1 &&
            EVP_DigestSign(ctx, out_sig, &n, msg, len) == 1 &&
            n == LF_SIGN_BYTES;
  EVP_MD_CTX_free(ctx);
  return ok ? LF_OK
            : LF_STATUS(LF_STATUS_INTERNAL, "libcrypto could not sign");
}

lf_status_t lf_sign_keygen(const char *path, const char *comment,
                           lf_strbuf_t *out_public_line) {
  if (!path || !*path)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "no key file named");
  EVP_PKEY *pkey = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
  if (!pkey)
    return LF_STATUS(LF_STATUS_INTERNAL, "libcrypto could not make a key");
  BIO *bio = BIO_new(BIO_s_secmem());
  if (!bio)
    bio = BIO_new(BIO_s_mem());
  char *pem = NULL;
  long pem_len = 0;
  if (!bio || PEM_write_bio_PrivateKey(bio, pkey, NULL, NULL, 0, NULL,
                                       NULL) != 1 ||
      (pem_len = BIO_get_mem_data(bio, &pem)) <= 0) {
    BIO_free(bio);
    EVP_PKEY_free(pkey);
    return LF_STATUS(LF_STATUS_INTERNAL, "libcrypto could not write the key");
  }
  lf_status_t st = LF_OK;
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                0600);
  if (fd < 0) {
    st = LF_STATUS(errno == EEXIST ? LF_STATUS_ALREADY_EXISTS
                                   : LF_STATUS_UNAVAILABLE,
                   "cannot create key file '%s': %s%s", path, strerror(errno),
                   errno == EEXIST ? " (keys are never overwritten)" : "");
  } else {
    size_t put = 0;
    while (put < (size_t)pem_len) {
      ssize_t w = write(fd, pem + put, (size_t)pem_len - put);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        break;
      put += (size_t)w;
    }
    if (put != (size_t)pem_len || fsync(fd) != 0)
      st = LF_STATUS(LF_STATUS_UNAVAILABLE, "cannot write key file '%s'",
                     path);
    close(fd);
    if (st)
      unlink(path);
  }
  BIO_free(bio); /* a secure-memory BIO cleanses itself */
  if (st) {
    EVP_PKEY_free(pkey);
    return st;
  }
  lf_signer_t *s = NULL;
  LF_RETURN_IF_ERROR(signer_from_pkey(pkey, &s));
  st = lf_signer_public_line(s, comment, out_public_line);
  lf_signer_free(s);
  return st;
}

/* ---- Keyring --------------------------------------------------------------*/

void lf_keyring_free(lf_keyring_t *ring) {
  if (!ring)
    return;
  for (size_t i = 0; i < ring->count; ++i)
    EVP_PKEY_free(ring->keys[i].pkey);
  free(ring->keys);
  free(ring);
}

size_t lf_keyring_size(const lf_keyring_t *ring) {
  return ring ? ring->count : 0;
}

static const ring_key_t *ring_find(const lf_keyring_t *ring,
                                   const char *key_id) {
  for (size_t i = 0; ring && key_id && i < ring->count; ++i)
    if (strcmp(ring->keys[i].id, key_id) == 0)
      return &ring->keys[i];
  return NULL;
}

bool lf_keyring_has(const lf_keyring_t *ring, const char *key_id) {
  return ring_find(ring, key_id) != NULL;
}

/* Decodes exactly 32 bytes of canonical base64 (44 characters, one '='). */
static bool decode_pub(const char *b64, size_t n,
                       unsigned char out[LF_SIGN_PUBLIC_BYTES]) {
  if (n != 44)
    return false;
  unsigned char buf[48];
  if (EVP_DecodeBlock(buf, (const unsigned char *)b64, (int)n) != 33)
    return false;
  unsigned char again[48];
  int m = EVP_EncodeBlock(again, buf, LF_SIGN_PUBLIC_BYTES);
  if (m != 44 || memcmp(again, b64, 44) != 0)
    return false; /* not canonical (stray bits, wrong padding) */
  memcpy(out, buf, LF_SIGN_PUBLIC_BYTES);
  return true;
}

lf_status_t lf_keyring_parse(const char *text, size_t len, const char *origin,
                             lf_keyring_t **out_ring) {
  *out_ring = NULL;
  if (!origin)
    origin = "keyring";
  lf_keyring_t *ring = calloc(1, sizeof(*ring));
  if (!ring)
    return oom();
  size_t line_no = 0, cap = 0;
  const char *p = text, *end = text ? text + len : text;
  while (p && p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    const char *le = eol ? eol : end;
    ++line_no;
    const char *s = p;
    p = eol ? eol + 1 : end;
    while (s < le && (*s == ' ' || *s == '\t' || *s == '\r'))
      ++s;
    const char *e = le;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
      --e;
    if (s == e || *s == '#')
      continue;
    for (const char *c = s; c < e; ++c)
      if ((unsigned char)*c < 0x20 && *c != '\t') {
        lf_keyring_free(ring);
        return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                         "%s:%zu: control character in a key line", origin,
                         line_no);
      }
    const char *alg_end = s;
    while (alg_end < e && *alg_end != ' ' && *alg_end != '\t')
      ++alg_end;
    const char *k = alg_end;
    while (k < e && (*k == ' ' || *k == '\t'))
      ++k;
    const char *k_end = k;
    while (k_end < e && *k_end != ' ' && *k_end != '\t')
      ++k_end;
    unsigned char pub[LF_SIGN_PUBLIC_BYTES];
    if ((size_t)(alg_end - s) != 7 || memcmp(s, "ed25519", 7) != 0) {
      lf_keyring_free(ring);
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "%s:%zu: a key line is 'ed25519 <base64 of 32 "
                       "bytes> [comment]'; this one does not start with "
                       "'ed25519'",
                       origin, line_no);
    }
    if (!decode_pub(k, (size_t)(k_end - k), pub)) {
      lf_keyring_free(ring);
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "%s:%zu: the key is not 44 characters of canonical "
                       "base64 encoding 32 bytes",
                       origin, line_no);
    }
    char id[LF_SIGN_KEY_ID_SIZE];
    lf_status_t st = lf_sign_key_id(pub, id);
    if (st) {
      lf_keyring_free(ring);
      return st;
    }
    if (ring_find(ring, id))
      continue; /* listed twice: one is enough */
    EVP_PKEY *pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub,
                                                 LF_SIGN_PUBLIC_BYTES);
    if (!pkey) {
      lf_keyring_free(ring);
      return LF_STATUS(LF_STATUS_INVALID_ARGUMENT,
                       "%s:%zu: libcrypto refuses the key", origin, line_no);
    }
    if (ring->count == cap) {
      size_t ncap = cap ? cap * 2 : 8;
      ring_key_t *nk = realloc(ring->keys, ncap * sizeof(*nk));
      if (!nk) {
        EVP_PKEY_free(pkey);
        lf_keyring_free(ring);
        return oom();
      }
      ring->keys = nk;
      cap = ncap;
    }
    memcpy(ring->keys[ring->count].id, id, sizeof(id));
    ring->keys[ring->count].pkey = pkey;
    ++ring->count;
  }
  *out_ring = ring;
  return LF_OK;
}

lf_status_t lf_keyring_load(const char *path, lf_keyring_t **out_ring) {
  *out_ring = NULL;
  if (!path || !*path)
    return LF_STATUS(LF_STATUS_INVALID_ARGUMENT, "no keyring file named");
  FILE *f = fopen(path, "rb");
  if (!f)
    return LF_STATUS(errno == ENOENT ? LF_STATUS_NOT_FOUND
                                     : LF_STATUS_UNAVAILABLE,
                     "trusted keys '%s': cannot open: %s", path,
                     strerror(errno));
  lf_strbuf_t buf;
  lf_strbuf_init(&buf, MAX_RING_FILE);
  char chunk[4096];
  size_t n;
  lf_status_t st = LF_OK;
  while (!st && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
    st = lf_strbuf_append(&buf, chunk, n);
  bool err = ferror(f);
  fclose(f);
  if (!st && err)
    st = LF_STATUS(LF_STATUS_UNAVAILABLE, "trusted keys '%s': read error",
                   path);
  if (!st)
    st = lf_keyring_parse(buf.data, buf.len, path, out_ring);
  lf_strbuf_free(&buf);
  return st;
}

lf_status_t lf_keyring_verify(const lf_keyring_t *ring, const char *key_id,
                              const void *msg, size_t len,
                              const unsigned char sig[LF_SIGN_BYTES]) {
  const ring_key_t *k = ring_find(ring, key_id);
  if (!k)
    return LF_STATUS(LF_STATUS_PERMISSION_DENIED,
                     "signed by key %s, which is not in the trusted set",
                     key_id && *key_id ? key_id : "(none)");
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  int r = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k->pkey) == 1
              ? EVP_DigestVerify(ctx, sig, LF_SIGN_BYTES, msg, len)
              : -1;
  EVP_MD_CTX_free(ctx);
  if (r == 1)
    return LF_OK;
  return LF_STATUS(LF_STATUS_PERMISSION_DENIED,
                   "the signature does not verify under trusted key %s "
                   "(the entry was changed after it was signed, or the "
                   "signature was forged)",
                   key_id);
}
