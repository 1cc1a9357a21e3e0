/* base64.c - Base64 (RFC 4648, padded; decoding is strict): the cache's
 * cubins and the signatures of cache and pattern table entries. */
#include "base/base64.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char b64_digits[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *lf_base64_encode(const unsigned char *data, size_t len) {
  if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
    return NULL;
  char *out = malloc((len + 2) / 3 * 4 + 1);
  if (!out)
    return NULL;
  char *o = out;
  size_t i = 0;
  for (; i + 3 <= len; i += 3) {
    uint32_t v =
        (uint32_t)data[i] << 16 | (uint32_t)data[i + 1] << 8 | data[i + 2];
    *o++ = b64_digits[v >> 18];
    *o++ = b64_digits[(v >> 12) & 63];
    *o++ = b64_digits[(v >> 6) & 63];
    *o++ = b64_digits[v & 63];
  }
  if (i < len) {
    uint32_t v = (uint32_t)data[i] << 16;
    if (i + 1 < len)
      v |= (uint32_t)data[i + 1] << 8;
    *o++ = b64_digits[v >> 18];
    *o++ = b64_digits[(v >> 12) & 63];
    *o++ = i + 1 < len ? b64_digits[(v >> 6) & 63] : '=';
    *o++ = '=';
  }
  *o = '\0';
  return out;
}

static int b64_value(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

bool lf_base64_decode(const char *text, unsigned char **out, size_t *out_len,
                       bool *out_oom) {
  size_t n = strlen(text);
  *out = NULL;
  *out_len = 0;
  if (n == 0 || n % 4 != 0)
    return false;
  size_t pad = text[n - 1] == '=' ? (text[n - 2] == '=' ? 2 : 1) : 0;
  unsigned char *buf = malloc(n / 4 * 3);
  if (!buf) {
    *out_oom = true;
    return false;
  }
  size_t o = 0;
  for (size_t i = 0; i < n; i += 4) {
    bool last = i + 4 == n;
    int v[4];
    for (int k = 0; k < 4; ++k) {
      bool is_pad = last && k >= 4 - (int)pad;
      v[k] = is_pad ? 0 : b64_value(text[i + k]);
      if (v[k] < 0)
        goto out_bad;
    }
    uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 |
                 (uint32_t)v[2] << 6 | (uint32_t)v[3];
    buf[o++] = (unsigned char)(w >> 16);
    if (!(last && pad == 2))
      buf[o++] = (unsigned char)(w >> 8);
    else if (w & 0xffff)
      goto out_bad;
    if (!(last && pad >= 1))
      buf[o++] = (unsigned char)w;
    else if (w & 0xff)
      goto out_bad;
  }
  *out = buf;
  *out_len = o;
  return true;

out_bad:
  free(buf);
  return false;
}
