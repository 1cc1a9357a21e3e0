/* sha256.c - SHA-256 via libcrypto's EVP interface. */
#include "base/sha256.h"

#include <openssl/evp.h>

lf_status_t lf_sha256_hex(const void *data, size_t len,
                          char out_hex[LF_SHA256_HEX_SIZE]) {
  static const char digits[] = "0123456789abcdef";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  out_hex[0] = '\0';
  if (!EVP_Digest(data, len, digest, &digest_len, EVP_sha256(), NULL) ||
      digest_len != 32)
    return LF_STATUS(LF_STATUS_INTERNAL, "libcrypto SHA-256 failed");
  for (unsigned int i = 0; i < digest_len; ++i) {
    out_hex[2 * i] = digits[digest[i] >> 4];
    out_hex[2 * i + 1] = digits[digest[i] & 0xf];
  }
  out_hex[64] = '\0';
  return LF_OK;
}

bool lf_sha256_is_hex(const char *s) {
  size_t i = 0;
  for (; s && s[i]; ++i)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return i == LF_SHA256_HEX_SIZE - 1;
}
